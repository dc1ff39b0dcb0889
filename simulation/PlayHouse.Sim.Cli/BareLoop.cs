using System.Runtime.CompilerServices;
using PlayHouse.Core.Seams;
using PlayHouse.Simulation.Network;

namespace PlayHouse.Sim.Cli;

/// <summary>The shape of a bare-loop run, mirroring the simulated echo it is compared with.</summary>
internal sealed record BareLoopOptions
{
    public required int Clients { get; init; }

    public required int Stages { get; init; }

    public required int InFlight { get; init; }

    public required int RequestsPerClient { get; init; }

    public required int MessageBytes { get; init; }

    public required LatencyModel Latency { get; init; }

    public required double LossProbability { get; init; }

    /// <summary>The extra delay of a lost segment, as the simulated stream's retransmit adds it.</summary>
    public required TimeSpan RetransmitDelay { get; init; }

    public required ulong Seed { get; init; }
}

/// <summary>What a bare-loop run did.</summary>
internal readonly record struct BareLoopResult(long RoundTrips, long Events, long VirtualTicks, long RttTicksSum);

/// <summary>
/// The baseline of <c>bench sim</c>: the same hops as a simulated echo (client send, network delay, stage mailbox,
/// handler, reply, network delay, client) with nothing else, on a <see cref="PriorityQueue{TElement, TPriority}"/>
/// of events ordered by virtual time and a <see cref="Queue{T}"/> per stage. It draws latency and loss from the same
/// model as the simulated network and copies the payload at the handler, so the gap to the full core is the cost
/// of the core itself (codec, sessions, dispatcher, pool, trace and checkers).
/// </summary>
/// <remarks>Not thread-safe; a run owns all its state.</remarks>
internal static class BareLoop
{
    private enum Hop : byte
    {
        ArriveAtServer,
        StageTurn,
        ArriveAtClient,
    }

    // Compiled fully optimised at once: called once per repeat, the loop otherwise ran as whatever code tiering had
    // reached (on-stack replacement, or a profile-guided version), at 5.5 or 3 million round trips per second from
    // one process to the next; the slow case made the ratio look twice as good as it is.
    [MethodImpl(MethodImplOptions.AggressiveOptimization)]
    public static BareLoopResult Run(BareLoopOptions options)
    {
        ArgumentNullException.ThrowIfNull(options);
        var random = new Xoshiro256StarStar(options.Seed);
        var inFlightTotal = options.Clients * Math.Max(1, options.InFlight);

        // Sized up front for every message in flight plus one turn per stage, so the measured loop does not grow them.
        var events = new PriorityQueue<Event, long>(inFlightTotal + options.Stages + 16);
        var mailboxes = new Queue<Message>[options.Stages];
        for (var i = 0; i < mailboxes.Length; i++)
        {
            mailboxes[i] = new Queue<Message>((inFlightTotal / options.Stages) + 16);
        }

        var turnScheduled = new bool[options.Stages];
        var issued = new int[options.Clients];
        var requestPayloads = new byte[options.Clients][];
        var replyPayloads = new byte[options.Clients][];
        for (var i = 0; i < options.Clients; i++)
        {
            requestPayloads[i] = new byte[options.MessageBytes];
            replyPayloads[i] = new byte[options.MessageBytes];
            requestPayloads[i].AsSpan().Fill((byte)i);
        }

        var retransmitTicks = options.RetransmitDelay.Ticks;
        long nowTicks = 0;
        long eventCount = 0;
        long roundTrips = 0;
        long rttTicksSum = 0;

        long Delay() => options.Latency.SampleTicks(random) + (options.LossProbability > 0 && random.NextDouble() < options.LossProbability ? retransmitTicks : 0);

        void Send(int client)
        {
            issued[client]++;
            events.Enqueue(new Event(Hop.ArriveAtServer, new Message(client, nowTicks)), nowTicks + Delay());
        }

        for (var client = 0; client < options.Clients; client++)
        {
            for (var k = 0; k < options.InFlight && issued[client] < options.RequestsPerClient; k++)
            {
                Send(client);
            }
        }

        while (events.TryDequeue(out var next, out var atTicks))
        {
            nowTicks = atTicks;
            eventCount++;
            var stage = next.Message.Client % options.Stages;
            switch (next.Hop)
            {
                case Hop.ArriveAtServer:
                    mailboxes[stage].Enqueue(next.Message);
                    if (!turnScheduled[stage])
                    {
                        turnScheduled[stage] = true;
                        events.Enqueue(new Event(Hop.StageTurn, next.Message), nowTicks);
                    }

                    break;
                case Hop.StageTurn:
                    // One message per turn, like the stage's mailbox; the turn is rescheduled while mail is waiting.
                    var message = mailboxes[stage].Dequeue();
                    requestPayloads[message.Client].AsSpan().CopyTo(replyPayloads[message.Client]);
                    events.Enqueue(new Event(Hop.ArriveAtClient, message), nowTicks + Delay());
                    if (mailboxes[stage].Count > 0)
                    {
                        events.Enqueue(new Event(Hop.StageTurn, mailboxes[stage].Peek()), nowTicks);
                    }
                    else
                    {
                        turnScheduled[stage] = false;
                    }

                    break;
                default:
                    roundTrips++;
                    rttTicksSum += nowTicks - next.Message.SentTicks;
                    if (issued[next.Message.Client] < options.RequestsPerClient)
                    {
                        Send(next.Message.Client);
                    }

                    break;
            }
        }

        return new BareLoopResult(roundTrips, eventCount, nowTicks, rttTicksSum);
    }

    private readonly record struct Message(int Client, long SentTicks);

    private readonly record struct Event(Hop Hop, Message Message);
}
