using PlayHouse.Core.Pooling;

namespace PlayHouse.Core.Runtime;

/// <summary>Work run off the stage on the executor; its result is posted back into the stage's mailbox.</summary>
internal sealed class OffStageWork<T>(StageHost stage, Func<T>? work, Func<Task<T>>? asyncWork, Action<OffStageResult<T>> continuation)
    : IThreadPoolWorkItem, IStageCompletion
{
    private OffStageResult<T> _result;

    public void Execute()
    {
        // Off-stage code must not see the stage's context, or its awaits would hop back onto the stage; it runs
        // under the executor's context instead, so its continuations stay on the executor seam.
        var previous = SynchronizationContext.Current;
        SynchronizationContext.SetSynchronizationContext(stage.OffStageContext);
        try
        {
            if (work is not null)
            {
                try
                {
                    _result = new OffStageResult<T>(work(), null, ErrorCodes.Success);
                }
                catch (Exception ex)
                {
                    _result = new OffStageResult<T>(default, ex, ErrorCodes.HandlerFailed);
                }

                stage.OffStage.PostCompletion(this);
            }
            else
            {
                _ = RunAsync();
            }
        }
        finally
        {
            SynchronizationContext.SetSynchronizationContext(previous);
        }
    }

    public void Complete(StageHost host)
    {
        host.OffStage.OnCompleted();
        continuation(_result);
    }

    public void Discard()
    {
        // The continuation owned the value; with the stage gone, a pooled buffer (or anything disposable) in it
        // is returned here, exactly once.
        var value = _result.Value;
        if (value is Payload payload)
        {
            payload.DisposeIfOwner();
        }
        else if (value is IDisposable disposable)
        {
            disposable.Dispose();
        }
    }

    private async Task RunAsync()
    {
        try
        {
            var value = await asyncWork!();
            _result = new OffStageResult<T>(value, null, ErrorCodes.Success);
        }
        catch (Exception ex)
        {
            _result = new OffStageResult<T>(default, ex, ErrorCodes.HandlerFailed);
        }

        stage.OffStage.PostCompletion(this);
    }
}
