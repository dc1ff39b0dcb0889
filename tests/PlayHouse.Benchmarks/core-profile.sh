#!/usr/bin/env bash
# Where a round trip of the `core` bench goes: profiles its single-threaded shape with perf (software clock events,
# so it runs in a VM without hardware counters) and gives each sample of the measured loop to the piece of the round
# trip whose frames are on its stack. Inlined code counts with the method it was inlined into.
# Usage, from the repository root after `dotnet build tests/PlayHouse.Benchmarks -c Release`:
#   bash tests/PlayHouse.Benchmarks/core-profile.sh [OUT_DIR]
set -euo pipefail
out=${1:-$(mktemp -d)}
mkdir -p "$out"
bench=tests/PlayHouse.Benchmarks/bin/Release/net10.0/PlayHouse.Benchmarks.dll
if [[ ! -f $bench ]]; then
  echo "error: $bench is missing; build it with: dotnet build tests/PlayHouse.Benchmarks -c Release" >&2
  exit 64
fi
# The JIT's code is named through its perf map; with W^X the code lives in a double mapping perf cannot name.
DOTNET_PerfMapEnabled=1 DOTNET_EnableWriteXorExecute=0 perf record -F 2000 -e cpu-clock -g -o "$out/core.data" -- \
  dotnet "$bench" core --shape single-threaded --repeats 4 | tee "$out/core.txt"
perf script -i "$out/core.data" -F ip,sym 2>/dev/null > "$out/core.script"
python3 - "$out/core.script" <<'PY'
import collections, sys
pieces = [
    ('CoreRoundTrip::ReceiveReply', None, 'client decode of the reply and its payload return'),
    ('CoreRoundTrip::Deliver', 'FrameReader::TryRead', 'server decode of the request: msg id, pool rent, copy'),
    ('CoreRoundTrip::Deliver', 'ServerNode::SendReply', 'the reply: ledger close, route, server encode'),
    ('CoreRoundTrip::Deliver', 'StageHost::RunTurn', 'the turn: executor hop, mailbox dequeue, handler, completion'),
    ('CoreRoundTrip::Deliver', 'ClientFrameRouting', 'dispatch: session, gate, ledger open, mailbox post'),
    ('CoreRoundTrip::Deliver', None, 'the bench: delivery loop'),
    ('CoreCpuTime::Measure', None, 'the bench: request encode and loop'),
]
counts, total, stack = collections.Counter(), 0, []
def flush():
    global total
    frames = ' | '.join(stack)
    if 'CoreCpuTime::Measure' not in frames:
        return
    total += 1
    for outer, inner, name in pieces:
        if outer in frames and (inner is None or inner in frames):
            counts[name] += 1
            return
for line in open(sys.argv[1]):
    if line.strip():
        stack.append(line.strip())
    elif stack:
        flush()
        stack = []
if stack:
    flush()
print(f'core.profile samples={total}')
for name, count in counts.most_common():
    print(f'core.piece share={100 * count / max(total, 1):.1f}% {name}')
PY
echo "core.profile load=\"$(cut -d' ' -f1-3 /proc/loadavg)\" data=$out/core.data"
