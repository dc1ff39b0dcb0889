using System.Globalization;

namespace PlayHouse.Simulation.Checkers;

/// <summary>One broken invariant: which checker saw it, at what virtual time, and a one-line description.</summary>
/// <param name="CheckerName">The <see cref="IInvariantChecker.Name"/> of the checker that recorded it.</param>
/// <param name="VirtualTime">The run's clock when it was recorded (virtual in simulation, the host's clock in real mode).</param>
/// <param name="Message">One line naming the stage, actor, request, queue or buffer involved.</param>
public sealed record Violation(string CheckerName, TimeSpan VirtualTime, string Message)
{
    /// <summary>Order of recording among all checkers that share one <see cref="CheckerContext"/>.</summary>
    public long Sequence { get; init; }

    public override string ToString() =>
        string.Create(CultureInfo.InvariantCulture, $"[{CheckerName}] at {VirtualTime:c}: {Message}");
}

/// <summary>A checker's line in a run report.</summary>
/// <param name="CheckerName">The checker.</param>
/// <param name="Passed">True when the checker recorded no violation.</param>
/// <param name="FirstViolationMessage">The first violation's message, or null when it passed.</param>
/// <param name="ViolationCount">Every violation recorded, including ones not kept in memory.</param>
public readonly record struct CheckerVerdict(string CheckerName, bool Passed, string? FirstViolationMessage, long ViolationCount)
{
    public override string ToString() =>
        Passed
            ? $"PASS {CheckerName}"
            : string.Create(CultureInfo.InvariantCulture, $"FAIL {CheckerName} ({ViolationCount} violation(s)): {FirstViolationMessage}");
}

/// <summary>Thrown by <c>ThrowIfViolated</c>; never thrown from inside a runtime callback.</summary>
public sealed class InvariantViolationException : Exception
{
    public InvariantViolationException()
    {
    }

    public InvariantViolationException(string message)
        : base(message)
    {
    }

    public InvariantViolationException(string message, Exception innerException)
        : base(message, innerException)
    {
    }

    /// <summary>The violations the message was built from (the first ones recorded).</summary>
    public IReadOnlyList<Violation> Violations { get; init; } = [];

    /// <summary>Builds the exception from the first violations of one or more checkers.</summary>
    public static InvariantViolationException From(IReadOnlyList<Violation> violations, long totalCount)
    {
        ArgumentNullException.ThrowIfNull(violations);
        if (violations.Count == 0)
        {
            return new InvariantViolationException($"{totalCount} invariant violation(s), none kept in memory.");
        }

        const int ListedMax = 10;
        var text = new System.Text.StringBuilder();
        text.Append(CultureInfo.InvariantCulture, $"{totalCount} invariant violation(s); first: {violations[0]}");
        for (var i = 1; i < violations.Count && i < ListedMax; i++)
        {
            text.Append('\n').Append(violations[i]);
        }

        if (totalCount > Math.Min(violations.Count, ListedMax))
        {
            text.Append(CultureInfo.InvariantCulture, $"\n... and {totalCount - Math.Min(violations.Count, ListedMax)} more.");
        }

        return new InvariantViolationException(text.ToString()) { Violations = violations };
    }
}

/// <summary>
/// A checker of one invariant. Checkers record violations as they see them and never throw from a runtime
/// callback; the run loop reads <see cref="HasViolations"/> and stops, and <see cref="ThrowIfViolated"/> turns
/// the record into an exception where the caller wants one.
/// </summary>
public interface IInvariantChecker
{
    /// <summary>A short stable name, used in violations and reports.</summary>
    string Name { get; }

    /// <summary>The first violations recorded (up to <see cref="CheckerContext.ViolationsKeptMax"/>), in order.</summary>
    IReadOnlyList<Violation> Violations { get; }

    /// <summary>Every violation recorded, including ones past the kept maximum.</summary>
    long ViolationCount { get; }

    bool HasViolations { get; }

    /// <summary>The first violation, or null.</summary>
    Violation? FirstViolation { get; }

    CheckerVerdict Verdict { get; }

    /// <summary>The cheap checks that hold after every simulated step. Must not throw.</summary>
    void CheckStep();

    /// <summary>The checks that hold only once the run is quiet (nothing left to run). Must not throw.</summary>
    void CheckQuiescent();

    /// <summary>Throws an <see cref="InvariantViolationException"/> naming the first violations, if any.</summary>
    void ThrowIfViolated();
}
