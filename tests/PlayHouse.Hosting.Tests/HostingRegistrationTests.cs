using Microsoft.Extensions.Configuration;
using Microsoft.Extensions.DependencyInjection;

namespace PlayHouse.Hosting.Tests;

/// <summary>What the registration extensions refuse before they touch the container, and what a shutdown report says of itself.</summary>
public sealed class HostingRegistrationTests
{
    [Fact]
    public void AddPlayServer_WithANullArgument_IsRefusedNamingIt_AndRegistersNothing()
    {
        var services = new ServiceCollection();

        var errors = new[]
        {
            Assert.Throws<ArgumentNullException>(() => services.AddPlayServer((IConfiguration)null!, _ => { })),
            Assert.Throws<ArgumentNullException>(() => ((IServiceCollection)null!).AddPlayServer(_ => { }, _ => { })),
            Assert.Throws<ArgumentNullException>(() => services.AddPlayServer((Action<PlayServerHostOptions>)null!, _ => { })),
            Assert.Throws<ArgumentNullException>(() => services.AddPlayServer(_ => { }, null!)),
        };

        Assert.Equal(["configuration", "services", "configureOptions", "configure"], errors.Select(e => e.ParamName));
        Assert.Empty(services);
    }

    [Fact]
    public void AddApiServer_WithANullArgument_IsRefusedNamingIt_AndRegistersNothing()
    {
        var services = new ServiceCollection();

        var errors = new[]
        {
            Assert.Throws<ArgumentNullException>(() => services.AddApiServer((IConfiguration)null!, _ => { })),
            Assert.Throws<ArgumentNullException>(() => ((IServiceCollection)null!).AddApiServer(_ => { }, _ => { })),
            Assert.Throws<ArgumentNullException>(() => services.AddApiServer((Action<ApiServerHostOptions>)null!, _ => { })),
            Assert.Throws<ArgumentNullException>(() => services.AddApiServer(_ => { }, null!)),
        };

        Assert.Equal(["configuration", "services", "configureOptions", "configure"], errors.Select(e => e.ParamName));
        Assert.Empty(services);
    }

    [Fact]
    public void AddPlayServer_Twice_IsRefusedSayingOnePerHost_AndAddsNothingMore()
    {
        var services = new ServiceCollection();
        services.AddPlayServer(_ => { }, _ => { });
        var registered = services.Count;

        var error = Assert.Throws<InvalidOperationException>(() => services.AddPlayServer(_ => { }, _ => { }));

        Assert.Equal("A play server is already registered with this host; run one play server per host.", error.Message);
        Assert.Equal(registered, services.Count);
    }

    [Fact]
    public void AddApiServer_Twice_IsRefusedSayingOnePerHost_ButBesideAPlayServerIsTaken()
    {
        var services = new ServiceCollection();
        services.AddPlayServer(_ => { }, _ => { });
        services.AddApiServer(_ => { }, _ => { });
        var registered = services.Count;

        var error = Assert.Throws<InvalidOperationException>(() => services.AddApiServer(_ => { }, _ => { }));

        Assert.Equal("An API server is already registered with this host; run one API server per host.", error.Message);
        Assert.Equal(registered, services.Count);
    }

    [Theory]
    [InlineData(0, 0, 0, 0, false)]
    [InlineData(1, 0, 0, 0, true)]
    [InlineData(0, 1, 0, 0, true)]
    [InlineData(0, 0, 1, 0, true)]
    [InlineData(0, 0, 0, 1, true)]
    [InlineData(2, 3, 4, 64, true)]
    public void DroppedAnything_IsTrueWhenAnyMessageRequestOrQueuedByteWasDropped(long mailbox, long unanswered, long pending, long sendBytes, bool expected)
    {
        var report = new ShutdownReport("play-1", !expected, TimeSpan.Zero, 0, 0, mailbox, unanswered, pending, sendBytes, 0);

        Assert.Equal(expected, report.DroppedAnything);
    }

    [Fact]
    public void ShutdownReport_SaysWhetherTheDrainFinished_AndEveryCount()
    {
        var drained = new ShutdownReport("play-1", true, TimeSpan.FromMilliseconds(12), 3, 2, 0, 0, 0, 0, 5);
        var timedOut = drained with { Drained = false, MailboxMessagesDropped = 4, SendBytesDropped = 64 };

        Assert.Equal(
            "play-1 stopped in 12 ms, drained: dropped 0 mailbox message(s), 0 unanswered request(s), 0 pending outgoing request(s), 0 queued send byte(s); closed 3 session(s) and 2 stage(s); refused 5 client message(s) while stopping",
            drained.ToString());
        Assert.StartsWith("play-1 stopped in 12 ms, drain timed out: dropped 4 mailbox message(s), 0 unanswered request(s), 0 pending outgoing request(s), 64 queued send byte(s);", timedOut.ToString(), StringComparison.Ordinal);
    }
}
