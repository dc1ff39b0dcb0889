using System.Buffers;
using PlayHouse.Core.Seams;
using PlayHouse.Simulation.Network;

namespace PlayHouse.Simulation.Tests.Network;

/// <summary>
/// A world, a network over it and a text trace, plus probes that record what each stream end and each bound
/// endpoint saw. Tests drive the network directly: connect, send, run the world, compare.
/// </summary>
internal sealed class NetworkHarness
{
    private readonly StringWriter _trace = new();
    private readonly Dictionary<SimConnection, StreamProbe> _probes = [];

    public NetworkHarness(ulong seed, PathOptions? defaults = null, SimWorldOptions? worldOptions = null, ArrayPool<byte>? streamStores = null)
    {
        World = new SimWorld(seed, worldOptions);
        World.Trace.Attach(_trace);
        Network = new SimNetwork(World, World.CreateRandom(), defaults ?? NoFaults, streamStores);
    }

    /// <summary>A harness on <paramref name="options"/> with one connection from "client" to "server", accepted.</summary>
    public static (NetworkHarness Harness, StreamPair Pair) Connected(PathOptions options, ulong seed = 1)
    {
        var h = new NetworkHarness(seed, options);
        h.Listen("server");
        var pair = h.Connect("client", "server");
        h.RunQuiet();
        Assert.True(pair.IsAccepted);
        return (h, pair);
    }

    /// <summary>Zero latency, no loss, no splitting: the network as an ideal pipe.</summary>
    public static PathOptions NoFaults { get; } = new() { SplitProbability = 0 };

    public SimWorld World { get; }

    public SimNetwork Network { get; }

    public NetworkCounters Counters => Network.Counters;

    public long OutstandingBuffers => Network.Buffers.GetStatistics().Outstanding;

    /// <summary>Lines of the text trace whose kind field equals <paramref name="kind"/>.</summary>
    public int TraceCount(string kind)
    {
        var count = 0;
        foreach (var line in _trace.ToString().Split('\n'))
        {
            var fields = line.Split(' ', 3);
            if (fields.Length >= 2 && fields[1] == kind)
            {
                count++;
            }
        }

        return count;
    }

    public string TraceText => _trace.ToString();

    /// <summary>Listens at <paramref name="endpoint"/>; each accepted server end gets a probe.</summary>
    public void Listen(string endpoint) => Network.Listen(endpoint, connection => _probes[connection] = new StreamProbe(connection, World));

    public StreamPair Connect(string from, string to)
    {
        var client = new StreamProbe(Network.Connect(from, to), World);
        _probes[client.Connection] = client;
        return new StreamPair(this, client);
    }

    /// <summary>The probe on the server end of a connection, once accepted.</summary>
    public StreamProbe? ServerOf(StreamProbe client) =>
        client.Connection.Peer is { } peer && _probes.TryGetValue(peer, out var probe) ? probe : null;

    public void RunQuiet() => Assert.True(World.RunUntilQuiet(), "the world did not go quiet");

    public void RunFor(TimeSpan span) => World.RunFor(span);

    public void AssertNoBytesInFlight()
    {
        Assert.Equal(0, OutstandingBuffers);
        Assert.Equal(0, Network.StreamBytesInFlight);
        Assert.Equal(0, Network.HeldCount);
    }
}

/// <summary>Both ends of one connection as probes; the server end exists once the accept has arrived.</summary>
internal sealed class StreamPair(NetworkHarness harness, StreamProbe client)
{
    public StreamProbe Client { get; } = client;

    public StreamProbe Server => harness.ServerOf(Client) ?? throw new InvalidOperationException("The server end has not been accepted yet.");

    public bool IsAccepted => harness.ServerOf(Client) is not null;
}

/// <summary>Records the bytes sent from and received at one stream end, with arrival times and closes.</summary>
internal sealed class StreamProbe
{
    private readonly SimWorld _world;

    public StreamProbe(SimConnection connection, SimWorld world)
    {
        _world = world;
        Connection = connection;
        connection.Received = data =>
        {
            Received.AddRange(data.ToArray());
            ChunkArrivalTicks.Add(_world.NowTicks);
            ChunkLengths.Add(data.Length);
        };
        connection.Closed = reason => CloseReasons.Add(reason);
    }

    public SimConnection Connection { get; }

    public List<byte> Sent { get; } = [];

    public List<byte> Received { get; } = [];

    public List<long> ChunkArrivalTicks { get; } = [];

    public List<int> ChunkLengths { get; } = [];

    public List<string> CloseReasons { get; } = [];

    /// <summary>Sends and, when the network accepted the bytes, remembers them as sent.</summary>
    public bool Send(ReadOnlySpan<byte> bytes)
    {
        var accepted = Connection.Send(bytes);
        if (accepted)
        {
            Sent.AddRange(bytes.ToArray());
        }

        return accepted;
    }

    public bool Send(int lengthBytes, IRandomSource random) => Send(Bytes(lengthBytes, random));

    public static byte[] Bytes(int lengthBytes, IRandomSource random)
    {
        var bytes = new byte[lengthBytes];
        for (var i = 0; i < bytes.Length; i++)
        {
            bytes[i] = (byte)random.NextUInt64();
        }

        return bytes;
    }
}

/// <summary>
/// Records datagrams arriving at one endpoint. Each test datagram carries its send index in its first four
/// bytes, so the probe can tell drops, duplicates and overtaking apart as a receiver would.
/// </summary>
internal sealed class DatagramProbe
{
    private readonly HashSet<int> _seen = [];
    private int _highestSeen = -1;

    public DatagramProbe(SimNetwork network, string endpoint)
    {
        network.Bind(endpoint, (from, datagram) =>
        {
            var index = BitConverter.ToInt32(datagram);
            Arrivals.Add(index);
            ArrivalTicks.Add(network.World.NowTicks);
            Senders.Add(from);
            if (_seen.Add(index))
            {
                // A datagram's first copy arriving after a later-sent datagram has overtaken it.
                if (index < _highestSeen)
                {
                    Overtaken++;
                }

                _highestSeen = Math.Max(_highestSeen, index);
            }
        });
    }

    public List<int> Arrivals { get; } = [];

    public List<long> ArrivalTicks { get; } = [];

    public List<string> Senders { get; } = [];

    public int Distinct => _seen.Count;

    public int Duplicates => Arrivals.Count - _seen.Count;

    public int Overtaken { get; private set; }

    public static byte[] Datagram(int index, int lengthBytes = 16)
    {
        var bytes = new byte[Math.Max(4, lengthBytes)];
        BitConverter.TryWriteBytes(bytes, index);
        return bytes;
    }
}
