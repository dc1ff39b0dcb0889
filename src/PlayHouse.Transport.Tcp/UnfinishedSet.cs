using System.Collections.Concurrent;

namespace PlayHouse.Transport.Tcp;

/// <summary>
/// The connections that have not finished yet (closed and every buffer returned), and a task that completes when
/// none is left: what a listener or a mesh transport awaits before it can say it stopped cleanly.
/// </summary>
/// <remarks>Thread-safe.</remarks>
internal sealed class UnfinishedSet<T>
    where T : notnull
{
    private readonly ConcurrentDictionary<T, byte> _items = new();
    private readonly Lock _gate = new();
    private TaskCompletionSource? _allFinished;

    public int Count => _items.Count;

    public void Add(T item) => _items.TryAdd(item, 0);

    /// <summary>The item finished; the last one to finish completes the waiting task.</summary>
    public void Finished(T item)
    {
        _items.TryRemove(item, out _);
        TaskCompletionSource? waiter = null;
        lock (_gate)
        {
            if (_items.IsEmpty)
            {
                waiter = _allFinished;
                _allFinished = null;
            }
        }

        waiter?.TrySetResult();
    }

    /// <summary>Completes when no item is left unfinished (at once when none is).</summary>
    public Task WhenAllFinished()
    {
        lock (_gate)
        {
            if (_items.IsEmpty)
            {
                return Task.CompletedTask;
            }

            _allFinished ??= new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
            return _allFinished.Task;
        }
    }
}
