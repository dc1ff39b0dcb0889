#!/usr/bin/env bash
# Coverage-guided fuzzing of PlayHouse.Core with afl++ and SharpFuzz.
#
#   tests/PlayHouse.Fuzz/fuzz.sh setup                 # afl++ (apt), the sharpfuzz tool, an instrumented build
#   tests/PlayHouse.Fuzz/fuzz.sh run TARGET [SECONDS]  # afl-fuzz on pool|codec|mesh (default 1800 s), niced
#   tests/PlayHouse.Fuzz/fuzz.sh cmin TARGET           # afl-cmin the run's queue into fixtures/corpus/TARGET
#   tests/PlayHouse.Fuzz/fuzz.sh stats TARGET          # execs/s, paths, crashes of the last run
#
# A run starts from the committed corpus (fixtures/corpus/TARGET) plus the target's seeds and writes to
# artifacts/fuzz/TARGET. Crashes land in artifacts/fuzz/TARGET/default/crashes; copy each (after fixing it) to
# fixtures/corpus/crashes/TARGET so every `dotnet test` replays it.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$(pwd)
work="$root/artifacts/fuzz"
bin="$work/bin"
plain="$work/plain"   # uninstrumented: instrumented code writes to afl's shared memory and crashes outside afl

export AFL_SKIP_BIN_CHECK=1          # the target is a .NET program; SharpFuzz speaks the fork-server protocol
export AFL_SKIP_CPUFREQ=1
export AFL_NO_AFFINITY=1             # the machine is shared; let the kernel place the fuzzer
export AFL_I_DONT_CARE_ABOUT_MISSING_CRASHES=1
export AFL_NO_UI=1
export DOTNET_CLI_TELEMETRY_OPTOUT=1 DOTNET_NOLOGO=1

usage() {
  echo "usage: $0 setup | run TARGET [SECONDS] | cmin TARGET | stats TARGET   (TARGET: pool, codec, mesh)" >&2
  exit 64
}

check_target() {
  case "${1:-}" in
    pool|codec|mesh) ;;
    *) echo "error: unknown target '${1:-}'; targets: pool, codec, mesh" >&2; exit 64 ;;
  esac
}

setup() {
  if ! command -v afl-fuzz >/dev/null 2>&1; then
    apt-get update && apt-get install -y afl++
  fi
  dotnet tool restore
  # A separate, instrumented copy: the normal build output stays uninstrumented.
  rm -rf "$bin" "$plain"
  dotnet publish tests/PlayHouse.Fuzz/PlayHouse.Fuzz.csproj -c Release -o "$plain" --nologo -v q
  cp -r "$plain" "$bin"
  for dll in PlayHouse.Core.dll PlayHouse.Transport.Tcp.dll; do
    dotnet tool run sharpfuzz "$bin/$dll"
  done
  echo "setup: instrumented build in $bin"
}

run() {
  local target=$1 seconds=${2:-1800}
  [ -x "$bin/PlayHouse.Fuzz" ] || setup
  local in="$work/$target-in" out="$work/$target" runbin="$work/$target-bin"
  rm -rf "$in" "$out" "$runbin"
  mkdir -p "$in"
  # Each run fuzzes its own copy, so a new setup (a rebuild) does not pull the binary from under a running fuzzer.
  cp -r "$bin" "$runbin"
  "$plain/PlayHouse.Fuzz" "$target" --write-seeds "$in"
  if [ -d "fixtures/corpus/$target" ]; then
    cp "fixtures/corpus/$target"/* "$in"/ 2>/dev/null || true
  fi
  nice -n 10 afl-fuzz -i "$in" -o "$out" -t 5000 -m none -V "$seconds" -- "$runbin/PlayHouse.Fuzz" "$target"
  stats "$target"
}

cmin() {
  local target=$1 out="$work/$1"
  local dest="fixtures/corpus/$target"
  rm -rf "$dest.new"
  afl-cmin -i "$out/default/queue" -o "$dest.new" -t 5000 -m none -- "$work/$target-bin/PlayHouse.Fuzz" "$target"
  rm -rf "$dest"
  mv "$dest.new" "$dest"
  # Plain names: afl's queue names carry colons and commas.
  local i=0
  for f in "$dest"/*; do
    mv "$f" "$dest/$(printf '%s-%04d' "$target" "$i")"
    i=$((i + 1))
  done
  echo "cmin: $(ls "$dest" | wc -l) files in $dest"
}

stats() {
  local s="$work/$1/default/fuzzer_stats"
  [ -f "$s" ] || { echo "error: no run of '$1' in $work/$1" >&2; exit 64; }
  grep -E '^(run_time|execs_done|execs_per_sec|corpus_count|paths_total|saved_crashes|unique_crashes|saved_hangs|bitmap_cvg|stability)' "$s"
  echo "loadavg: $(cut -d' ' -f1-3 /proc/loadavg)"
}

case "${1:-}" in
  setup) setup ;;
  run) check_target "${2:-}"; run "$2" "${3:-1800}" ;;
  cmin) check_target "${2:-}"; cmin "$2" ;;
  stats) check_target "${2:-}"; stats "$2" ;;
  *) usage ;;
esac
