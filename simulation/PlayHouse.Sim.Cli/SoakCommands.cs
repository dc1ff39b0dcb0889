using System.CommandLine;
using System.Globalization;
using PlayHouse.Core.Runtime;
using PlayHouse.Sim.Tcp;
using PlayHouse.Simulation.Runs;

namespace PlayHouse.Sim.Cli;

/// <summary>
/// <c>soak</c>: connect / authenticate / request / disconnect cycles against one in-process play server over loopback
/// TCP, with the memory curve sampled and judged against stated budgets (<see cref="TcpSoak"/>).
/// </summary>
/// <remarks>Real sockets and the wall clock, like <c>bench tcp</c>: not replayable; the options are printed. Not thread-safe.</remarks>
internal sealed class SoakCommands(IRunView view, CancellationToken stop)
{
#pragma warning disable RS0030 // real-socket mode runs on the wall clock
    private static readonly TimeProvider WallTime = TimeProvider.System;
#pragma warning restore RS0030

    public Command Build()
    {
        var defaults = new TcpSoakOptions();
        var cycles = new Option<long>("--cycles", "-n") { Description = "Connect / authenticate / request / disconnect cycles in all.", DefaultValueFactory = _ => defaults.Cycles };
        var parallel = new Option<string>("--parallel")
        {
            Description = "Parallel clients of each phase, comma-separated; the cycles are split evenly between the phases.",
            DefaultValueFactory = _ => string.Join(',', defaults.Parallel),
        };
        var stageIds = new Option<int>("--stage-ids") { Description = "Stage ids the fresh accounts spread over (cycle n joins stage 1 + n mod this); set it to --cycles for a new stage id every cycle.", DefaultValueFactory = _ => defaults.StageIds };
        var hostileEvery = new Option<int>("--hostile-every") { Description = "Every n-th cycle sends a hostile frame instead (oversized length, bad UTF-8, empty msg id, or not authenticating first) and expects the server to close it; 0 for none.", DefaultValueFactory = _ => defaults.HostileEvery };
        var sampleEvery = new Option<long>("--sample-every") { Description = "A memory sample and a progress line every this many cycles.", DefaultValueFactory = _ => defaults.SampleEvery };
        var expiry = new Option<int>("--actor-expiry-ms") { Description = "The server's DisconnectedActorExpiry in ms; 0 keeps disconnected actors (the core's default is 60000).", DefaultValueFactory = _ => (int)defaults.Server.DisconnectedActorExpiry!.Value.TotalMilliseconds };
        var idle = new Option<int>("--idle-stage-close-ms") { Description = "The server's IdleStageCloseAfter in ms; 0 never closes idle stages (the core's default is 60000).", DefaultValueFactory = _ => (int)defaults.Server.IdleStageCloseAfter!.Value.TotalMilliseconds };
        var stagesMax = new Option<int>("--stages-max") { Description = "The server's StagesMax.", DefaultValueFactory = _ => defaults.Server.StagesMax };
        var actorsMax = new Option<int>("--actors-per-stage-max") { Description = "The server's ActorsPerStageMax.", DefaultValueFactory = _ => defaults.Server.ActorsPerStageMax };
        var workingSetBudget = new Option<double>("--working-set-budget-mb") { Description = "Flat means the working set at the end is at most this many MB above the first sample after the start.", DefaultValueFactory = _ => defaults.WorkingSetBudgetMb };
        var liveHeapBudget = new Option<double>("--live-heap-budget-mb") { Description = "Flat means the heap after a full collection at the end is at most this many MB above the first sample after the start.", DefaultValueFactory = _ => defaults.LiveHeapBudgetMb };
        var command = new Command(
            "soak",
            "Runs connect / authenticate / request / disconnect cycles against one in-process play server over loopback TCP, in phases of parallel clients, with fresh accounts over many stage ids; samples working set and heaps; fails (exit 2) when a cycle was lost, a session or pooled buffer leaked, or memory grew past its budget.")
        {
            cycles, parallel, stageIds, hostileEvery, sampleEvery, expiry, idle, stagesMax, actorsMax, workingSetBudget, liveHeapBudget,
        };
        command.SetAction(parse =>
        {
            var options = new TcpSoakOptions
            {
                Cycles = parse.GetValue(cycles),
                Parallel = ParseParallel(parse.GetValue(parallel)),
                StageIds = parse.GetValue(stageIds),
                HostileEvery = parse.GetValue(hostileEvery),
                SampleEvery = parse.GetValue(sampleEvery),
                WorkingSetBudgetMb = parse.GetValue(workingSetBudget),
                LiveHeapBudgetMb = parse.GetValue(liveHeapBudget),
                Server = new ServerOptions
                {
                    DisconnectedActorExpiry = Span(parse.GetValue(expiry), "--actor-expiry-ms"),
                    IdleStageCloseAfter = Span(parse.GetValue(idle), "--idle-stage-close-ms"),
                    StagesMax = parse.GetValue(stagesMax),
                    ActorsPerStageMax = parse.GetValue(actorsMax),
                },
            };
            try
            {
                options.Validate();
            }
            catch (ArgumentException ex)
            {
                throw new UsageException("soak: --cycles, --stage-ids, --sample-every, --stages-max and --actors-per-stage-max must be at least 1, each --parallel value within 1..4096, --hostile-every and the budgets at least 0.", ex);
            }

            return Soak(options);
        });
        return command;
    }

    private static IReadOnlyList<int> ParseParallel(string? text)
    {
        var parts = (text ?? string.Empty).Split(',', StringSplitOptions.RemoveEmptyEntries | StringSplitOptions.TrimEntries);
        var values = new List<int>();
        foreach (var part in parts)
        {
            if (!int.TryParse(part, NumberStyles.None, CultureInfo.InvariantCulture, out var value) || value is < 1 or > 4096)
            {
                throw new UsageException($"--parallel takes counts within 1..4096 separated by commas (e.g. 16,32,64), got '{text}'.");
            }

            values.Add(value);
        }

        return values.Count > 0 ? values : throw new UsageException($"--parallel takes counts within 1..4096 separated by commas (e.g. 16,32,64), got '{text}'.");
    }

    private static TimeSpan? Span(int milliseconds, string name) => milliseconds switch
    {
        0 => null,
        < 0 => throw new UsageException($"{name} must be 0 (off) or a time in ms above 0, got {milliseconds.ToString(CultureInfo.InvariantCulture)}."),
        _ => TimeSpan.FromMilliseconds(milliseconds),
    };

    private int Soak(TcpSoakOptions options)
    {
        static string Ms(TimeSpan? span) => span is { } s ? s.TotalMilliseconds.ToString("0", CultureInfo.InvariantCulture) : "off";
        var server = options.Server;
        view.Line(string.Create(
            CultureInfo.InvariantCulture,
            $"soak cycles={options.Cycles} parallel={string.Join(',', options.Parallel)} stage-ids={options.StageIds} hostile-every={options.HostileEvery} sample-every={options.SampleEvery} actor-expiry-ms={Ms(server.DisconnectedActorExpiry)} idle-stage-close-ms={Ms(server.IdleStageCloseAfter)} stages-max={server.StagesMax} actors-per-stage-max={server.ActorsPerStageMax} working-set-budget-mb={options.WorkingSetBudgetMb} live-heap-budget-mb={options.LiveHeapBudgetMb}"));
        view.Line("machine " + TcpSoak.DescribeMachine());
        var gate = new Lock();
        void Progress(string line)
        {
            // Samples are taken on whichever worker finished the sampled cycle.
            lock (gate)
            {
                view.Line(line);
            }
        }

        var report = TcpSoak.RunAsync(options, WallTime, Progress, stop).GetAwaiter().GetResult();
        foreach (var phase in report.Phases)
        {
            view.Line(string.Create(CultureInfo.InvariantCulture, $"phase.parallel-{phase.Parallel} cycles={phase.Cycles} wall-seconds={phase.WallSeconds:0.0} cycles-per-second={phase.CyclesPerSecond:0}"));
        }

        view.Line(string.Create(CultureInfo.InvariantCulture, $"cycles ok={report.CyclesOk} hostile-closed={report.HostileClosed} refused-at-cap={report.RefusedAtCap} lost={report.Lost} wall-seconds={report.WallSeconds:0.0}"));
        if (report.FirstLoss is not null)
        {
            view.Line("first-loss=" + report.FirstLoss);
        }

        view.Line(string.Create(CultureInfo.InvariantCulture, $"leaked.sessions={report.LeakedServerSessions + report.LeakedListenerSessions} (server {report.LeakedServerSessions}, listener {report.LeakedListenerSessions})"));
        view.Line(string.Create(CultureInfo.InvariantCulture, $"buffers.outstanding={report.ServerBuffersOutstanding + report.ClientBuffersOutstanding} (server {report.ServerBuffersOutstanding}, clients {report.ClientBuffersOutstanding})"));
        view.Line(string.Create(CultureInfo.InvariantCulture, $"memory start={report.Samples[0].WorkingSetMb:0.0} MB end={report.Samples[^1].WorkingSetMb:0.0} MB peak={report.PeakWorkingSetMb:0.0} MB (working set); live heap start={report.Samples[0].LiveHeapMb:0.0} MB end={report.Samples[^1].LiveHeapMb:0.0} MB"));
        view.Line("registry.after-cycles " + report.RegistriesAfterCycles);
        view.Line("registry.end " + report.RegistriesAtEnd);
        foreach (var (name, value) in report.ServerCounters)
        {
            view.Line(string.Create(CultureInfo.InvariantCulture, $"server.{name}={value}"));
        }

        foreach (var (name, value) in report.TransportCounters)
        {
            view.Line(string.Create(CultureInfo.InvariantCulture, $"tcp.{name}={value}"));
        }

        foreach (var budget in report.Budgets)
        {
            view.Line(budget.ToString());
        }

        return report.Passed ? RunExitCodes.Pass : RunExitCodes.InvariantViolation;
    }
}
