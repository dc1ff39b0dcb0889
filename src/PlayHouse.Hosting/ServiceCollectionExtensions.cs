using Microsoft.Extensions.Configuration;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.DependencyInjection.Extensions;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Options;

namespace PlayHouse.Hosting;

/// <summary>
/// Registers PlayHouse-style servers with a generic host. Each server is really registered as an
/// <see cref="IHostedService"/> (PlayHouse's extensions built the server but never registered it), its options are
/// bound from configuration and validated when the host starts, and stopping the host drains it gracefully.
/// </summary>
public static class PlayHouseServiceCollectionExtensions
{
    /// <summary>Adds a play server bound to <paramref name="configuration"/> (a section such as "PlayServer").</summary>
    public static IServiceCollection AddPlayServer(this IServiceCollection services, IConfiguration configuration, Action<PlayServerBuilder> configure)
    {
        ArgumentNullException.ThrowIfNull(configuration);
        return services.AddPlayServer(options => configuration.Bind(options), configure);
    }

    /// <summary>Adds a play server configured in code. One play server per host.</summary>
    public static IServiceCollection AddPlayServer(this IServiceCollection services, Action<PlayServerHostOptions> configureOptions, Action<PlayServerBuilder> configure)
    {
        ArgumentNullException.ThrowIfNull(services);
        ArgumentNullException.ThrowIfNull(configureOptions);
        ArgumentNullException.ThrowIfNull(configure);
        if (services.Any(d => d.ServiceType == typeof(PlayServerHost)))
        {
            throw new InvalidOperationException("A play server is already registered with this host; run one play server per host.");
        }

        var builder = new PlayServerBuilder();
        configure(builder);
        services.AddOptions<PlayServerHostOptions>().Configure(configureOptions).ValidateOnStart();
        services.TryAddEnumerable(ServiceDescriptor.Singleton<IValidateOptions<PlayServerHostOptions>, ServerHostOptionsValidator<PlayServerHostOptions>>());
        services.AddSingleton(builder);
        services.AddSingleton<PlayServerHost>();
        services.AddHostedService(sp => sp.GetRequiredService<PlayServerHost>());
        return services;
    }

    /// <summary>Adds an API server bound to <paramref name="configuration"/> (a section such as "ApiServer").</summary>
    public static IServiceCollection AddApiServer(this IServiceCollection services, IConfiguration configuration, Action<ApiServerBuilder> configure)
    {
        ArgumentNullException.ThrowIfNull(configuration);
        return services.AddApiServer(options => configuration.Bind(options), configure);
    }

    /// <summary>Adds an API server configured in code. One API server per host.</summary>
    public static IServiceCollection AddApiServer(this IServiceCollection services, Action<ApiServerHostOptions> configureOptions, Action<ApiServerBuilder> configure)
    {
        ArgumentNullException.ThrowIfNull(services);
        ArgumentNullException.ThrowIfNull(configureOptions);
        ArgumentNullException.ThrowIfNull(configure);
        if (services.Any(d => d.ServiceType == typeof(ApiServerHost)))
        {
            throw new InvalidOperationException("An API server is already registered with this host; run one API server per host.");
        }

        var builder = new ApiServerBuilder();
        configure(builder);
        services.AddOptions<ApiServerHostOptions>().Configure(configureOptions).ValidateOnStart();
        services.TryAddEnumerable(ServiceDescriptor.Singleton<IValidateOptions<ApiServerHostOptions>, ServerHostOptionsValidator<ApiServerHostOptions>>());
        services.AddSingleton(builder);
        services.AddSingleton<ApiServerHost>();
        services.AddHostedService(sp => sp.GetRequiredService<ApiServerHost>());
        return services;
    }
}
