using PuppeteerSharp;

namespace PlayHouse.Pages.Tests;

/// <summary>
/// One headless Chromium for the page tests (Debian's <c>chromium</c> at /usr/bin/chromium, or the one
/// <c>PLAYHOUSE_SIM_CHROMIUM</c> names), started with a fresh profile and the flags that work in a container without
/// a display or network. A missing browser fails every test that needs it with the command that installs it.
/// </summary>
/// <remarks>Thread-safe for xunit's use: tests of one collection run one at a time, each on a page of its own.</remarks>
public sealed class HeadlessChromium : IAsyncLifetime
{
    public const string PathVariable = "PLAYHOUSE_SIM_CHROMIUM";

    private readonly string _profile = Directory.CreateTempSubdirectory("playhouse-pages-chromium-").FullName;
    private IBrowser? _browser;
    private string? _missing;

    public static string ExecutablePath => Environment.GetEnvironmentVariable(PathVariable) is { Length: > 0 } path ? path : "/usr/bin/chromium";

    /// <summary>Where screenshots and the pages under test are kept: artifacts/pages of the repository (CI keeps artifacts/).</summary>
    public static string ArtifactsFolder { get; } = Path.Combine(RepositoryRoot(), "artifacts", "pages");

    public async Task InitializeAsync()
    {
        if (!File.Exists(ExecutablePath))
        {
            _missing = $"Chromium is not installed at {ExecutablePath}: the page tests need a real browser. Install it with 'apt-get install chromium' (.ci/run does), or set {PathVariable} to a Chromium binary.";
            return;
        }

        Directory.CreateDirectory(ArtifactsFolder);
        _browser = await Puppeteer.LaunchAsync(new LaunchOptions
        {
            ExecutablePath = ExecutablePath,
            Headless = true,
            UserDataDir = _profile,
            Args =
            [
                "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
                "--disable-component-update", "--disable-sync",
            ],
            Timeout = 120_000,
        });
    }

    public async Task DisposeAsync()
    {
        if (_browser is not null)
        {
            await _browser.CloseAsync();
            _browser.Dispose();
        }

        try
        {
            Directory.Delete(_profile, recursive: true);
        }
        catch (IOException)
        {
            // Chromium may still hold a lock file for a moment; the folder is a temporary one.
        }
    }

    /// <summary>Opens a file in a new page of the given size and waits until the page says it is drawn (or failed).</summary>
    public async Task<LoadedPage> OpenAsync(string file, int width = 1400, int height = 900, string fragment = "")
    {
        if (_missing is not null)
        {
            Assert.Fail(_missing);
        }

        var page = await _browser!.NewPageAsync();
        await page.SetViewportAsync(new ViewPortOptions { Width = width, Height = height });
        var loaded = new LoadedPage(page);
        await page.GoToAsync(new Uri(Path.GetFullPath(file)).AbsoluteUri + fragment);
        await page.WaitForFunctionAsync("() => document.body && document.body.dataset.ready", new WaitForFunctionOptions { Timeout = 120_000 });
        return loaded;
    }

    private static string RepositoryRoot()
    {
        for (var directory = new DirectoryInfo(AppContext.BaseDirectory); directory is not null; directory = directory.Parent)
        {
            if (File.Exists(Path.Combine(directory.FullName, "PlayHouse.Sim.sln")))
            {
                return directory.FullName;
            }
        }

        return Path.GetTempPath();
    }
}

/// <summary>A page opened by <see cref="HeadlessChromium"/>, with every console error and uncaught error it raised.</summary>
public sealed class LoadedPage : IAsyncDisposable
{
    public LoadedPage(IPage page)
    {
        Page = page;
        page.Console += (_, e) =>
        {
            if (e.Message.Type == ConsoleType.Error)
            {
                Errors.Add("console: " + e.Message.Text);
            }
        };
        page.PageError += (_, e) => Errors.Add("page: " + e.Message);
    }

    public IPage Page { get; }

    public List<string> Errors { get; } = [];

    public Task<T> Eval<T>(string script) => Page.EvaluateExpressionAsync<T>(script);

    /// <summary>Waits for the next frames to be drawn (the page redraws on animation frames after input).</summary>
    public async Task Settle() => await Page.EvaluateFunctionAsync("() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))");

    public async Task Screenshot(string name) =>
        await Page.ScreenshotAsync(Path.Combine(HeadlessChromium.ArtifactsFolder, name + ".png"), new ScreenshotOptions { FullPage = true });

    public void AssertNoErrors() => Assert.True(Errors.Count == 0, "The page logged errors:\n" + string.Join('\n', Errors));

    public async ValueTask DisposeAsync() => await Page.CloseAsync();
}

[CollectionDefinition(Name)]
public sealed class BrowserCollection : ICollectionFixture<HeadlessChromium>
{
    public const string Name = "headless chromium";
}
