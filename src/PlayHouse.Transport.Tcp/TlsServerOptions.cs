using System.Security.Cryptography;
using System.Security.Cryptography.X509Certificates;

namespace PlayHouse.Transport.Tcp;

/// <summary>TLS on a <see cref="TcpClientListener"/>: every accepted connection is authenticated with this certificate before it becomes a session.</summary>
public sealed record TlsServerOptions
{
    /// <summary>The server certificate, with its private key.</summary>
    public required X509Certificate2 Certificate { get; init; }

    /// <summary>A connection whose handshake has not finished after this long is closed and counted (a silent client holds no session).</summary>
    public TimeSpan HandshakeTimeout { get; init; } = TimeSpan.FromSeconds(10);

    /// <summary>
    /// A self-signed server certificate for <paramref name="hostName"/> (and the loopback addresses), valid from a day
    /// before <paramref name="time"/>'s now for a year, as test servers use when no certificate is configured.
    /// Clients must skip validation for it (PlayHouse's connector: <c>SkipServerCertificateValidation</c>).
    /// </summary>
    public static X509Certificate2 CreateSelfSignedCertificate(string hostName, TimeProvider time)
    {
        ArgumentException.ThrowIfNullOrEmpty(hostName);
        ArgumentNullException.ThrowIfNull(time);
        using var key = ECDsa.Create(ECCurve.NamedCurves.nistP256);
        var request = new CertificateRequest($"CN={hostName}", key, HashAlgorithmName.SHA256);
        var names = new SubjectAlternativeNameBuilder();
        names.AddDnsName(hostName);
        names.AddIpAddress(System.Net.IPAddress.Loopback);
        names.AddIpAddress(System.Net.IPAddress.IPv6Loopback);
        request.CertificateExtensions.Add(names.Build());
        request.CertificateExtensions.Add(new X509KeyUsageExtension(X509KeyUsageFlags.DigitalSignature, critical: true));
        request.CertificateExtensions.Add(new X509EnhancedKeyUsageExtension([new Oid("1.3.6.1.5.5.7.3.1")], critical: false));
        var now = time.GetUtcNow();
        using var ephemeral = request.CreateSelfSigned(now.AddDays(-1), now.AddYears(1));

        // An ephemeral key cannot serve TLS on every platform; a PKCS#12 round trip gives the certificate a usable one.
        return X509CertificateLoader.LoadPkcs12(ephemeral.Export(X509ContentType.Pkcs12), password: null);
    }

    /// <summary>Loads a PKCS#12 (.pfx) certificate with its key, as PlayHouse's test server reads <c>TLS_CERT_PATH</c>.</summary>
    public static X509Certificate2 LoadCertificate(string path, string? password) =>
        X509CertificateLoader.LoadPkcs12FromFile(path, password);

    internal void Validate()
    {
        ArgumentNullException.ThrowIfNull(Certificate);
        if (!Certificate.HasPrivateKey)
        {
            throw new ArgumentException("TlsServerOptions.Certificate has no private key.", nameof(Certificate));
        }

        if (HandshakeTimeout <= TimeSpan.Zero)
        {
            throw new ArgumentException("TlsServerOptions.HandshakeTimeout is out of range.", nameof(HandshakeTimeout));
        }
    }
}
