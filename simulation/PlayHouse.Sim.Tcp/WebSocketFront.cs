using System.Net;
using System.Security.Cryptography.X509Certificates;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Hosting;
using Microsoft.AspNetCore.Hosting.Server;
using Microsoft.AspNetCore.Hosting.Server.Features;
using Microsoft.AspNetCore.Http;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Logging;
using PlayHouse.Transport.Tcp;

namespace PlayHouse.Sim.Tcp;

/// <summary>
/// Kestrel in front of a <see cref="TcpCluster"/>'s play servers: one loopback port per play server, whose <c>/ws</c>
/// hands each WebSocket to that server's <see cref="TcpClientListener"/> (ASP.NET Core's WebSockets middleware), so
/// WebSocket sessions share the server's session table, caps and counters with its TCP sessions. With a certificate,
/// the ports serve <c>wss://</c>.
/// </summary>
public sealed class WebSocketFront : IAsyncDisposable
{
    /// <summary>The path PlayHouse's connectors use by default.</summary>
    public const string Path = "/ws";

    private readonly List<WebApplication> _apps = [];
    private readonly Dictionary<string, Uri> _addresses = new(StringComparer.Ordinal);

    private WebSocketFront()
    {
    }

    /// <summary>Starts one Kestrel listener per play server of <paramref name="cluster"/>.</summary>
    public static async Task<WebSocketFront> StartAsync(TcpCluster cluster, X509Certificate2? certificate, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(cluster);
        var front = new WebSocketFront();
        try
        {
            foreach (var node in cluster.PlayServers)
            {
                var listener = node.Listener ?? throw new InvalidOperationException($"{node.NodeId} takes no clients.");
                var builder = WebApplication.CreateSlimBuilder();
                builder.Logging.ClearProviders();
                builder.WebHost.ConfigureKestrel(kestrel => kestrel.Listen(IPAddress.Loopback, 0, listen =>
                {
                    if (certificate is not null)
                    {
                        listen.UseHttps(certificate);
                    }
                }));
                var app = builder.Build();
                app.UseWebSockets();
                app.Map(Path, context => ServeAsync(context, listener));
                front._apps.Add(app);
                await app.StartAsync(cancellationToken).ConfigureAwait(false);
                var bound = app.Services.GetRequiredService<IServer>().Features.Get<IServerAddressesFeature>()?.Addresses.FirstOrDefault()
                    ?? throw new InvalidOperationException("Kestrel reported no address.");
                var http = new Uri(bound, UriKind.Absolute);
                front._addresses[node.NodeId] = new UriBuilder(http) { Scheme = certificate is null ? "ws" : "wss", Path = Path }.Uri;
            }

            return front;
        }
        catch
        {
            await front.DisposeAsync().ConfigureAwait(false);
            throw;
        }
    }

    /// <summary>The <c>ws://</c> (or <c>wss://</c>) address of <paramref name="nodeId"/>'s WebSocket endpoint.</summary>
    public Uri AddressOf(string nodeId) => _addresses[nodeId];

    public async ValueTask DisposeAsync()
    {
        foreach (var app in _apps)
        {
            await app.StopAsync().ConfigureAwait(false);
            await app.DisposeAsync().ConfigureAwait(false);
        }

        _apps.Clear();
    }

    private static async Task ServeAsync(HttpContext context, TcpClientListener listener)
    {
        if (!context.WebSockets.IsWebSocketRequest)
        {
            context.Response.StatusCode = StatusCodes.Status400BadRequest;
            return;
        }

        using var webSocket = await context.WebSockets.AcceptWebSocketAsync().ConfigureAwait(false);
        var remote = context.Connection.RemoteIpAddress is { } address ? new IPEndPoint(address, context.Connection.RemotePort) : null;
        await listener.ServeWebSocketAsync(webSocket, remote, context.RequestAborted).ConfigureAwait(false);
    }
}
