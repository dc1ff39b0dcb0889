namespace PlayHouse.Core.Runtime;

/// <summary>
/// A stage's off-stage work in flight: each piece of work holds one completion slot from its start until its
/// continuation has run on the stage, so the off-stage results waiting in the mailbox never exceed
/// <see cref="ServerOptions.OffStageInFlightMax"/>. Work past the cap is refused at the call.
/// </summary>
/// <remarks>
/// Invariant: 0 &lt;= <see cref="InFlight"/> &lt;= <see cref="ServerOptions.OffStageInFlightMax"/>; a slot is taken once
/// (<see cref="Start"/>) and freed once (<see cref="OnCompleted"/>), each end asserted.
/// Threading: <see cref="Start"/> and <see cref="OnCompleted"/> run in the stage's turns; <see cref="PostCompletion"/>
/// runs on whichever thread finished the work, and touches only the stage's thread-safe post.
/// </remarks>
internal sealed class OffStageSlots(StageHost stage)
{
    /// <summary>Work started whose continuation has not run yet.</summary>
    public int InFlight { get; private set; }

    /// <summary>Takes a slot and schedules <paramref name="work"/> on the executor; throws when every slot is taken.</summary>
    public void Start(IThreadPoolWorkItem work)
    {
        // Posting a refusal notice instead would itself be a mailbox entry without a bound (a loop of calls floods it).
        var max = stage.Options.OffStageInFlightMax;
        if (InFlight >= max)
        {
            stage.Counters.AddOffStageRefused();
            throw new OffStageQueueFullException(stage.NodeId, stage.StageId, max);
        }

        InFlight++;
        stage.Server.Executor.Schedule(work);
    }

    /// <summary>Frees the completion slot of finished work; runs on the stage, before its continuation.</summary>
    public void OnCompleted()
    {
        InFlight--;
        if (InFlight < 0)
        {
            throw new InvalidOperationException($"Stage {stage.StageId} on {stage.NodeId} freed more off-stage slots than it took.");
        }
    }

    /// <summary>Posts the result of off-stage work (any thread). It bypasses the external cap because it holds one of
    /// the stage's completion slots, taken when the work started.</summary>
    public void PostCompletion(IStageCompletion completion)
    {
        if (!stage.Post(new StageMessage { Kind = StageWorkKind.OffStageResult, State = completion }))
        {
            // The stage closed meanwhile: no continuation will run, so what the result owns is released here.
            stage.Counters.AddOffStageResultDiscarded();
            completion.Discard();
        }
    }
}
