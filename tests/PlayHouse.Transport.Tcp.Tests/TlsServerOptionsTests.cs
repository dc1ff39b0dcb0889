using System.Net;
using System.Security.Cryptography.X509Certificates;
using Microsoft.Extensions.Time.Testing;

namespace PlayHouse.Transport.Tcp.Tests;

/// <summary>
/// The TLS options of a listener: the self-signed test certificate (its subject, names, key usage, server purpose and
/// validity around the given clock) and the checks a listener's options run on it.
/// </summary>
public sealed class TlsServerOptionsTests
{
    private static readonly DateTimeOffset Now = new(2026, 3, 1, 12, 0, 0, TimeSpan.Zero);

    [Fact]
    public void SelfSignedCertificate_NamesTheHostAndTheLoopbackAddresses()
    {
        using var certificate = TlsServerOptions.CreateSelfSignedCertificate("game.example", new FakeTimeProvider(Now));

        var names = certificate.Extensions.OfType<X509SubjectAlternativeNameExtension>().Single();

        Assert.Equal("CN=game.example", certificate.Subject);
        Assert.Equal(["game.example"], names.EnumerateDnsNames());
        Assert.Equal([IPAddress.Loopback, IPAddress.IPv6Loopback], names.EnumerateIPAddresses());
        Assert.True(certificate.HasPrivateKey);
    }

    [Fact]
    public void SelfSignedCertificate_IsForDigitalSignatureAndServerAuthentication()
    {
        using var certificate = TlsServerOptions.CreateSelfSignedCertificate("localhost", new FakeTimeProvider(Now));

        var usage = certificate.Extensions.OfType<X509KeyUsageExtension>().Single();
        var purposes = certificate.Extensions.OfType<X509EnhancedKeyUsageExtension>().Single();

        Assert.Equal(X509KeyUsageFlags.DigitalSignature, usage.KeyUsages);
        Assert.True(usage.Critical);
        Assert.Equal("1.3.6.1.5.5.7.3.1", Assert.Single(purposes.EnhancedKeyUsages.Cast<System.Security.Cryptography.Oid>()).Value);
        Assert.False(purposes.Critical);
    }

    [Fact]
    public void SelfSignedCertificate_IsValidFromADayBeforeTheClockForAYear()
    {
        using var certificate = TlsServerOptions.CreateSelfSignedCertificate("localhost", new FakeTimeProvider(Now));

        Assert.Equal(Now.AddDays(-1).UtcDateTime, certificate.NotBefore.ToUniversalTime());
        Assert.Equal(Now.AddYears(1).UtcDateTime, certificate.NotAfter.ToUniversalTime());
    }

    [Fact]
    public void SelfSignedCertificate_WithoutAHostNameOrAClock_Throws()
    {
        Assert.Throws<ArgumentException>(() => TlsServerOptions.CreateSelfSignedCertificate("", TimeProvider.System));
        Assert.Throws<ArgumentNullException>(() => TlsServerOptions.CreateSelfSignedCertificate(null!, TimeProvider.System));
        var thrown = Assert.Throws<ArgumentNullException>(() => TlsServerOptions.CreateSelfSignedCertificate("localhost", null!));
        Assert.Equal("time", thrown.ParamName);
    }

    [Fact]
    public void Validate_WithoutACertificate_ThrowsArgumentNull()
    {
        var options = new TcpTransportOptions { Tls = new TlsServerOptions { Certificate = null! } };

        var thrown = Assert.Throws<ArgumentNullException>(options.Validate);

        Assert.Equal(nameof(TlsServerOptions.Certificate), thrown.ParamName);
    }

    [Fact]
    public void Validate_WithACertificateWithoutItsKey_ThrowsNamingTheKey()
    {
        using var withKey = TlsServerOptions.CreateSelfSignedCertificate("localhost", TimeProvider.System);
        using var withoutKey = X509CertificateLoader.LoadCertificate(withKey.RawData);
        var options = new TcpTransportOptions { Tls = new TlsServerOptions { Certificate = withoutKey } };

        var thrown = Assert.Throws<ArgumentException>(options.Validate);

        Assert.StartsWith("TlsServerOptions.Certificate has no private key.", thrown.Message, StringComparison.Ordinal);
        Assert.Equal(nameof(TlsServerOptions.Certificate), thrown.ParamName);
    }

    [Fact]
    public void Validate_WithAHandshakeTimeoutOfZero_ThrowsNamingIt()
    {
        using var certificate = TlsServerOptions.CreateSelfSignedCertificate("localhost", TimeProvider.System);
        var options = new TcpTransportOptions { Tls = new TlsServerOptions { Certificate = certificate, HandshakeTimeout = TimeSpan.Zero } };

        var thrown = Assert.Throws<ArgumentException>(options.Validate);

        Assert.StartsWith("TlsServerOptions.HandshakeTimeout is out of range.", thrown.Message, StringComparison.Ordinal);
        Assert.Equal(nameof(TlsServerOptions.HandshakeTimeout), thrown.ParamName);
    }

    [Fact]
    public void TransportOptions_DisableNagleByDefault()
    {
        Assert.True(new TcpTransportOptions().NoDelay);
        Assert.False(new TcpTransportOptions { NoDelay = false }.NoDelay);
    }
}
