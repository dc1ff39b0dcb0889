#!/usr/bin/env bash
# Mutation testing with Stryker.NET (a local tool in .config/dotnet-tools.json), one target at a time.
#
#   tests/mutation.sh list                                       # every target: what it mutates, which tests run
#   tests/mutation.sh run TARGET... [--since REF] [--break-at N] [--concurrency N]
#   tests/mutation.sh run all [...]                              # every target, one after another
#
# Stryker builds the test project in place and copies each mutated assembly into its output folder, so each run
# works in a fresh clone of the committed tree (HEAD; uncommitted changes are not tested) under $MUTATION_WORK
# (default /tmp/playhouse-mutation). --since REF mutates only the files changed since REF (a branch, tag or commit of
# this repository). Reports (html, json) are copied to artifacts/mutation/TARGET/; each run ends with one line:
#   mutation: TARGET score S% (killed K, timeout T, survived V, no coverage N; compile errors E) in M min
# The score counts killed and timed-out mutants over every tested one; mutants that do not compile are left out.
# Exit 0 when every target reached --break-at (default 0), 1 when one did not, 64 on bad input.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
work="${MUTATION_WORK:-/tmp/playhouse-mutation}"
export DOTNET_CLI_TELEMETRY_OPTOUT=1 DOTNET_NOLOGO=1

# name | test project folder | config file (in that folder)
targets="runtime|tests/PlayHouse.Core.Tests|stryker-runtime.json
codec|tests/PlayHouse.Core.Tests|stryker-codec.json
mesh|tests/PlayHouse.Core.Tests|stryker-mesh.json
collections|tests/PlayHouse.Core.Tests|stryker-collections.json
seams|tests/PlayHouse.Core.Tests|stryker-seams.json
pooling|tests/PlayHouse.Core.Tests|stryker-pooling.json
transport|tests/PlayHouse.Transport.Tcp.Tests|stryker-transport.json
hosting|tests/PlayHouse.Hosting.Tests|stryker-hosting.json
network|tests/PlayHouse.Simulation.Tests|stryker-network.json
clients|tests/PlayHouse.Simulation.Tests|stryker-clients.json
checkers|tests/PlayHouse.Simulation.Tests|stryker-checkers.json
time|tests/PlayHouse.Simulation.Tests|stryker-time.json"
names=$(cut -d'|' -f1 <<<"$targets" | paste -sd' ')

usage() {
  echo "error: $1; usage: $0 list | run TARGET... [--since REF] [--break-at N] [--concurrency N] (TARGET: all, ${names// /, })" >&2
  exit 64
}

list() {
  while IFS='|' read -r name dir config; do
    mutate=$(python3 -c 'import json,sys; print(" ".join(json.load(open(sys.argv[1]))["stryker-config"]["mutate"]))' "$dir/$config")
    printf '%-12s %-38s %s\n' "$name" "$dir/$config" "$mutate"
  done <<<"$targets"
}

# Prints "score killed timeout survived nocoverage compile" from a Stryker json report.
summarize() {
  python3 - "$1" <<'PY'
import json, sys
report = json.load(open(sys.argv[1]))
counts = {}
for f in report["files"].values():
    for m in f["mutants"]:
        counts[m["status"]] = counts.get(m["status"], 0) + 1
k, t, s, n, c = (counts.get(x, 0) for x in ("Killed", "Timeout", "Survived", "NoCoverage", "CompileError"))
tested = k + t + s + n
print(f"{100.0 * (k + t) / tested:.2f}" if tested else "n/a", k, t, s, n, c)
PY
}

run_target() {
  local name=$1 dir=$2 config=$3 since=$4 break_at=$5 concurrency=$6
  local clone="$work/$name" out="$root/artifacts/mutation/$name"
  local head started args
  head=$(git -C "$root" rev-parse HEAD)
  rm -rf "$clone" "$out"
  mkdir -p "$work" "$out"
  git clone --quiet --shared --no-checkout "$root" "$clone"
  git -C "$clone" checkout --quiet --detach "$head"
  args=(-f "$config" --skip-version-check --break-at "$break_at" --output "$out")
  [ -n "$concurrency" ] && args+=(--concurrency "$concurrency")
  [ -n "$since" ] && args+=("--since:$(git -C "$root" rev-parse "$since")")
  started=$(date +%s)
  local status=0
  (cd "$clone/$dir" && dotnet tool restore >/dev/null && dotnet stryker "${args[@]}") || status=$?
  local minutes report
  minutes=$(( ($(date +%s) - started + 59) / 60 ))
  report=$(find "$out" -name mutation-report.json | head -n 1)
  if [ -z "$report" ]; then
    echo "mutation: $name produced no report (no changed file to mutate, or the run failed; exit $status) in $minutes min"
    return "$status"
  fi

  read -r score killed timeout survived nocoverage compile <<<"$(summarize "$report")"
  echo "mutation: $name score $score% (killed $killed, timeout $timeout, survived $survived, no coverage $nocoverage; compile errors $compile) in $minutes min"
  return "$status"
}

[ $# -ge 1 ] || usage "no command"
command=$1
shift
case "$command" in
  list) list; exit 0 ;;
  run) ;;
  *) usage "unknown command '$command'" ;;
esac

selected=()
since=""
break_at=0
concurrency=""
while [ $# -gt 0 ]; do
  case "$1" in
    --since) [ $# -ge 2 ] || usage "--since needs a ref"; since=$2; shift 2 ;;
    --break-at) [[ ${2:-} =~ ^[0-9]+$ ]] && [ "$2" -le 100 ] || usage "--break-at needs a number from 0 to 100"; break_at=$2; shift 2 ;;
    --concurrency) [[ ${2:-} =~ ^[1-9][0-9]*$ ]] || usage "--concurrency needs a positive number"; concurrency=$2; shift 2 ;;
    all) read -r -a selected <<<"$names"; shift ;;
    -*) usage "unknown option '$1'" ;;
    *) grep -qx "$1" <<<"${names// /$'\n'}" || usage "unknown target '$1'"; selected+=("$1"); shift ;;
  esac
done
[ ${#selected[@]} -gt 0 ] || usage "no target"
[ -z "$since" ] || git -C "$root" rev-parse --verify --quiet "$since^{commit}" >/dev/null || usage "--since: '$since' is not a commit of this repository"

failed=0
for name in "${selected[@]}"; do
  line=$(grep "^$name|" <<<"$targets")
  IFS='|' read -r _ dir config <<<"$line"
  run_target "$name" "$dir" "$config" "$since" "$break_at" "$concurrency" || failed=1
done
exit "$failed"
