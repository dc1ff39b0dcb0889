namespace PlayHouse.Simulation.Network;

/// <summary>
/// Reads the bytes the network carries, for a picture of the run (the frames behind each message of a timeline); see
/// <see cref="SimNetwork.Tap"/>.
/// </summary>
/// <remarks>Called on the simulation thread, inside the send. The span is valid only during the call.</remarks>
public interface INetworkTap
{
    /// <summary>A stream send the network accepted from the end <paramref name="connectionId"/>.</summary>
    void OnStreamSend(long connectionId, ReadOnlySpan<byte> bytes);
}
