using System.Net.Security;
using System.Net.Sockets;
using System.Security.Cryptography.X509Certificates;

namespace PlayHouse.Transport.Tcp.Tests;

/// <summary>
/// How a TLS connection ends on the wire: a session the server closes ends with a FIN, a handshake that fails ends
/// the connection with a count and a log line, and a finished TLS session gives its connection slot back.
/// </summary>
public sealed class TlsSessionCloseTests : IDisposable
{
    private readonly X509Certificate2 _certificate = TlsServerOptions.CreateSelfSignedCertificate("localhost", TimeProvider.System);

    public void Dispose() => _certificate.Dispose();

    [Fact]
    public async Task SessionClosedByTheServer_EndsTheClientsStreamCleanly_NotWithAReset()
    {
        await using var server = TestServer.Start(Options());
        using var client = new TcpClient();
        await client.ConnectAsync(server.EndPoint.Address, server.EndPoint.Port);
        await using var stream = new SslStream(client.GetStream());
        await stream.AuthenticateAsClientAsync(ClientAuthentication()).WaitAsync(TestServer.Patience);
        await Eventually.True(() => server.Listener.SessionCount == 1, TestServer.Patience);

        var session = Assert.Single(server.Listener.Sessions);
        session.Close("the server closes");
        var read = await stream.ReadAsync(new byte[64]).AsTask().WaitAsync(TestServer.Patience);

        Assert.Equal(0, read);
        Assert.Equal(SessionCloseReason.ClosedByServer, (await server.NextCloseAsync()).Reason);
    }

    [Fact]
    public async Task HandshakeThatFails_EndsTheConnection_CountsAndLogsTheFailure()
    {
        await using var server = TestServer.Start(Options());
        using var client = new TcpClient();
        await client.ConnectAsync(server.EndPoint.Address, server.EndPoint.Port);
        var raw = client.GetStream();
        var localPort = ((System.Net.IPEndPoint)client.Client.LocalEndPoint!).Port;

        // Not a TLS record: the server's handshake fails on its first read.
        await raw.WriteAsync(Enumerable.Repeat((byte)0xFF, 16).ToArray());
        var ended = await ReadToEndAsync(raw).WaitAsync(TestServer.Patience);
        await Eventually.True(() => server.Counters.TlsHandshakeFailures == 1, TestServer.Patience);

        Assert.True(ended);
        Assert.Equal(0, server.Listener.SessionCount);
        await Eventually.True(() => server.Logger.Contains("TLS handshake from"), TestServer.Patience);
        Assert.Contains(server.Logger.Lines, l => l.StartsWith($"Information: TLS handshake from 127.0.0.1:{localPort} failed: ", StringComparison.Ordinal));
    }

    [Fact]
    public async Task TlsSessionThatFinished_GivesItsConnectionSlotBack()
    {
        await using var server = TestServer.Start(Options() with { MaxConnections = 1 });
        using (var first = await server.ConnectAuthenticatedAsync(1, options: ClientOptions()))
        {
            Assert.Equal(1, server.Listener.SessionCount);
        }

        await server.NextCloseAsync();
        using var second = await server.ConnectAuthenticatedAsync(2, options: ClientOptions());

        Assert.Equal(1, server.Listener.SessionCount);
        Assert.Equal(0, server.Counters.ConnectionsRefusedAtLimit);
    }

    /// <summary>Reads until the server ends the connection, by a FIN or a reset.</summary>
    private static async Task<bool> ReadToEndAsync(NetworkStream stream)
    {
        var buffer = new byte[256];
        try
        {
            while (await stream.ReadAsync(buffer) > 0)
            {
            }
        }
        catch (IOException e) when (e.InnerException is SocketException { SocketErrorCode: SocketError.ConnectionReset })
        {
        }

        return true;
    }

    private TcpTransportOptions Options() => new() { Tls = new TlsServerOptions { Certificate = _certificate } };

    private SslClientAuthenticationOptions ClientAuthentication() => new()
    {
        TargetHost = "localhost",
        RemoteCertificateValidationCallback = (_, presented, _, _) => presented is not null && presented.GetCertHashString() == _certificate.GetCertHashString(),
    };

    private TcpPlayClientOptions ClientOptions() => new() { RequestTimeout = TestServer.Patience, Tls = ClientAuthentication() };
}
