namespace PlayHouse.Transport.Tcp;

/// <summary>The real clock for real-socket code when no other <see cref="TimeProvider"/> is supplied.</summary>
internal static class RealTime
{
#pragma warning disable RS0030 // Real-mode composition root: sockets run on the system clock unless a test supplies another.
    public static TimeProvider System => TimeProvider.System;
#pragma warning restore RS0030
}
