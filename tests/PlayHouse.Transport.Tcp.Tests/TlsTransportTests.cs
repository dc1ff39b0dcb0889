using System.Net.Security;
using System.Net.Sockets;
using System.Security.Cryptography.X509Certificates;
using Microsoft.Extensions.Time.Testing;
using PlayHouse.Sim.Tcp;

namespace PlayHouse.Transport.Tcp.Tests;

/// <summary>
/// TCP+TLS on the client listener (<see cref="TcpTransportOptions.Tls"/>) with <see cref="TcpPlayClient"/> as a TLS
/// client: the same session protocol over <see cref="SslStream"/>, every pooled buffer back in the ledger, and the
/// handshake bounded by its timeout and by the connection cap.
/// </summary>
public sealed class TlsTransportTests : IDisposable
{
    private readonly X509Certificate2 _certificate = TlsServerOptions.CreateSelfSignedCertificate("localhost", TimeProvider.System);

    public void Dispose() => _certificate.Dispose();

    [Fact]
    public async Task TlsListener_TcpPlayClientOverTls_EchoesEveryRequestAndReturnsEveryBuffer()
    {
        await using var server = TestServer.Start(new TcpTransportOptions { Tls = new TlsServerOptions { Certificate = _certificate } });
        using var client = await server.ConnectAuthenticatedAsync(1, options: ClientOptions());

        var replies = await Task.WhenAll(Enumerable.Range(0, 50).Select(i => client.RequestAsync(EchoMsgIds.Echo, 1, [(byte)i, 2, 3])));

        Assert.All(replies, r => Assert.True(r.IsSuccess, $"error {r.ErrorCode}"));
        Assert.Equal(Enumerable.Range(0, 50).Select(i => (byte)i), replies.Select(r => r.Payload[0]));
        Assert.Equal(ClientTransportKind.Tls, Assert.Single(server.Listener.Sessions).Transport);
        Assert.Equal(51, server.Counters.FramesReceived);
    }

    [Fact]
    public async Task TlsListener_ClientThatNeverHandshakes_HoldsASlotUntilTheHandshakeTimeout_ThenNoSession()
    {
        // The listener runs on a manual clock, so the handshake times out exactly when the test moves time.
        var time = new FakeTimeProvider();
        await using var server = TestServer.Start(
            new TcpTransportOptions
            {
                MaxConnections = 1,
                Tls = new TlsServerOptions { Certificate = _certificate, HandshakeTimeout = TimeSpan.FromSeconds(10) },
            },
            transportTime: time);
        using var silent = new TcpClient();
        await silent.ConnectAsync(server.EndPoint.Address, server.EndPoint.Port);

        // The silent handshake holds the only slot (connections are accepted in arrival order), so a well-behaved
        // client is refused until the silent one times out.
        var probeHandshook = await TryHandshakeAsync(server);
        await Eventually.True(() => server.Counters.ConnectionsRefusedAtLimit == 1, TestServer.Patience);
        Assert.Equal(0, server.Counters.TlsHandshakeFailures);
        time.Advance(TimeSpan.FromSeconds(10));
        await Eventually.True(() => server.Counters.TlsHandshakeFailures == 1, TestServer.Patience);
        using var client = await server.ConnectAuthenticatedAsync(2, options: ClientOptions());

        Assert.False(probeHandshook);
        Assert.Equal(1, server.Counters.ConnectionsRefusedAtLimit);
        Assert.Equal(1, server.Counters.TlsHandshakeFailures);
        Assert.Equal(1, server.Listener.SessionCount);
    }

    [Fact]
    public async Task SilentHandshake_StillHoldsItsSlotOneTickBeforeTheHandshakeTimeout_AndEndsAtIt()
    {
        var time = new FakeTimeProvider();
        var timeout = TimeSpan.FromSeconds(10);
        await using var server = TestServer.Start(
            new TcpTransportOptions { MaxConnections = 1, Tls = new TlsServerOptions { Certificate = _certificate, HandshakeTimeout = timeout } },
            transportTime: time);
        using var silent = new TcpClient();
        await silent.ConnectAsync(server.EndPoint.Address, server.EndPoint.Port);
        Assert.False(await TryHandshakeAsync(server));
        await Eventually.True(() => server.Counters.ConnectionsRefusedAtLimit == 1, TestServer.Patience);

        // One tick before the timeout the silent handshake still holds the only slot: a second probe is refused too.
        time.Advance(timeout - TimeSpan.FromTicks(1));
        var refusedJustBefore = !await TryHandshakeAsync(server);
        await Eventually.True(() => server.Counters.ConnectionsRefusedAtLimit == 2, TestServer.Patience);
        var failuresJustBefore = server.Counters.TlsHandshakeFailures;
        time.Advance(TimeSpan.FromTicks(1));
        await Eventually.True(() => server.Counters.TlsHandshakeFailures == 1, TestServer.Patience);

        Assert.True(refusedJustBefore);
        Assert.Equal(0, failuresJustBefore);
        Assert.Equal(0, server.Listener.SessionCount);
    }

    private static async Task<bool> TryHandshakeAsync(TestServer server)
    {
        using var probe = new TcpClient();
        try
        {
            await probe.ConnectAsync(server.EndPoint.Address, server.EndPoint.Port);
            await using var stream = new SslStream(probe.GetStream());
            await stream.AuthenticateAsClientAsync(new SslClientAuthenticationOptions { TargetHost = "localhost", RemoteCertificateValidationCallback = (_, _, _, _) => true }).WaitAsync(TestServer.Patience);
            return true;
        }
        catch (Exception e) when (e is IOException or SocketException or System.Security.Authentication.AuthenticationException)
        {
            return false;
        }
    }

    private TcpPlayClientOptions ClientOptions() => new()
    {
        RequestTimeout = TestServer.Patience,
        Tls = new SslClientAuthenticationOptions
        {
            TargetHost = "localhost",

            // The test pins the certificate it made rather than trusting any.
            RemoteCertificateValidationCallback = (_, presented, _, _) => presented is not null && presented.GetCertHashString() == _certificate.GetCertHashString(),
        },
    };
}
