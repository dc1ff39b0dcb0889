#!/usr/bin/env bash
# Mutation testing with Stryker.NET (a local tool in .config/dotnet-tools.json).
#
#   tests/mutation.sh list                                       # every target: its config and what it mutates
#   tests/mutation.sh run TARGET... [--since REF] [--break-at N] [--concurrency N] [--rerun REPORT]
#   tests/mutation.sh run all [...]                              # every target
#
# Stryker builds the test project in place and copies each mutated assembly into its output folder, so each run
# works in a fresh clone of the committed tree (HEAD; uncommitted changes are not tested) under $MUTATION_WORK
# (default /tmp/playhouse-mutation). Targets of one test project run together in one Stryker run (one build and one
# initial test run) and are scored apart. --since REF mutates only the files changed since REF (a branch, tag or
# commit of this repository). --rerun REPORT (a json report of an earlier run of the same targets) mutates only the
# lines of that report's survivors and mutants without coverage, and scores each target over the earlier report's
# mutants with the new statuses of those lines (the files must be unchanged since: tests added, not code); the merged
# report is written beside the new one as mutation-report-merged.json. Reports (html, json) are copied to
# artifacts/mutation/GROUP/; each target ends with:
#   mutation: TARGET score S% (killed K, timeout T, survived V, no coverage N; compile errors E) in M min
# The score counts killed and timed-out mutants over every tested one; mutants that do not compile are left out.
# Exit 0 when every target reached --break-at (default 0), 1 when one did not or a run failed, 64 on bad input.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
work="${MUTATION_WORK:-/tmp/playhouse-mutation}"
export DOTNET_CLI_TELEMETRY_OPTOUT=1 DOTNET_NOLOGO=1

# name | test project folder | config file (in that folder)
targets="runtime|tests/PlayHouse.Core.Tests|stryker-runtime.json
runtime-turn|tests/PlayHouse.Core.Tests|stryker-runtime-turn.json
runtime-host|tests/PlayHouse.Core.Tests|stryker-runtime-host.json
runtime-stage|tests/PlayHouse.Core.Tests|stryker-runtime-stage.json
runtime-server|tests/PlayHouse.Core.Tests|stryker-runtime-server.json
runtime-ledgers|tests/PlayHouse.Core.Tests|stryker-runtime-ledgers.json
runtime-rest|tests/PlayHouse.Core.Tests|stryker-runtime-rest.json
codec|tests/PlayHouse.Core.Tests|stryker-codec.json
mesh|tests/PlayHouse.Core.Tests|stryker-mesh.json
collections|tests/PlayHouse.Core.Tests|stryker-collections.json
seams|tests/PlayHouse.Core.Tests|stryker-seams.json
pooling|tests/PlayHouse.Core.Tests|stryker-pooling.json
transport|tests/PlayHouse.Transport.Tcp.Tests|stryker-transport.json
transport-session|tests/PlayHouse.Transport.Tcp.Tests|stryker-transport-session.json
transport-stream|tests/PlayHouse.Transport.Tcp.Tests|stryker-transport-stream.json
transport-listener|tests/PlayHouse.Transport.Tcp.Tests|stryker-transport-listener.json
hosting|tests/PlayHouse.Hosting.Tests|stryker-hosting.json
network|tests/PlayHouse.Simulation.Tests|stryker-network.json
clients|tests/PlayHouse.Simulation.Tests|stryker-clients.json
checkers|tests/PlayHouse.Simulation.Tests|stryker-checkers.json
time|tests/PlayHouse.Simulation.Tests|stryker-time.json"
names=$(cut -d'|' -f1 <<<"$targets" | paste -sd' ')

usage() {
  echo "error: $1; usage: $0 list | run TARGET... [--since REF] [--break-at N] [--concurrency N] [--rerun REPORT] (TARGET: all, ${names// /, })" >&2
  exit 64
}

dir_of() { grep "^$1|" <<<"$targets" | cut -d'|' -f2; }

config_of() { grep "^$1|" <<<"$targets" | cut -d'|' -f3; }

list() {
  local name
  for name in $names; do
    printf '%-18s %-66s %s\n' "$name" "$(dir_of "$name")/$(config_of "$name")" \
      "$(python3 -c 'import json,sys; print(" ".join(json.load(open(sys.argv[1]))["stryker-config"]["mutate"]))' "$(dir_of "$name")/$(config_of "$name")")"
  done
}

# Prints "score killed timeout survived nocoverage compile" for the files of a Stryker json report that a config's
# mutate globs select (the json work is in tests/mutation_reports.py).
summarize() {
  python3 "$root/tests/mutation_reports.py" summarize "$1" "$2"
}

# Writes to $1 a config that mutates what every following config mutates and runs the tests any of them runs (with
# the first one's other settings): the test filters are joined with "|", and a config without one runs every test.
# An exclusion of one config that another config includes by the same glob (a slice that leaves out its neighbour's
# files) is dropped, so that the neighbour's files stay mutated.
combine() {
  python3 "$root/tests/mutation_reports.py" combine "$@"
}

# Rewrites the config $1 (in the clone $2) to mutate only the lines of the survivors and uncovered mutants of the
# report $3 that its globs select: one `path{start..end}` span per run of adjacent lines, in characters, as Stryker's
# mutate filter takes them. Fails, naming the file, when a file changed since the report (its mutants' places moved).
# Prints how many mutants of the report the spans cover.
narrow_to_survivors() {
  python3 "$root/tests/mutation_reports.py" narrow "$1" "$2" "$3"
}

# Writes to $3 the report $1 (an earlier run) with every mutant that the report $2 (a rerun of some of its lines)
# tested again given its new status, matched by place, mutator and replacement.
merge_reports() {
  python3 "$root/tests/mutation_reports.py" merge "$1" "$2" "$3"
}

# Runs the named targets of one test project in one Stryker run and prints one score line per target.
run_group() {
  local dir=$1 since=$2 break_at=$3 concurrency=$4 rerun=$5
  shift 5
  local group clone out head config earlier=""
  group=$(IFS=+; echo "$*")
  clone="$work/$group"
  out="$root/artifacts/mutation/$group"
  head=$(git -C "$root" rev-parse HEAD)
  mkdir -p "$work"
  if [ -n "$rerun" ]; then
    # The earlier report may sit in the output folder that this run replaces.
    earlier="$work/$group.earlier.json"
    cp "$rerun" "$earlier"
  fi
  rm -rf "$clone" "$out"
  mkdir -p "$out"
  git clone --quiet --shared --no-checkout "$root" "$clone"
  git -C "$clone" checkout --quiet --detach "$head"
  local configs=() name
  for name in "$@"; do
    configs+=("$clone/$dir/$(config_of "$name")")
  done

  config="${configs[0]}"
  if [ ${#configs[@]} -gt 1 ]; then
    config="$clone/$dir/stryker-combined.json"
    combine "$config" "${configs[@]}"
  fi
  if [ -n "$earlier" ]; then
    cp "$config" "$clone/$dir/stryker-rerun.json"
    config="$clone/$dir/stryker-rerun.json"
    local covered
    covered=$(narrow_to_survivors "$config" "$clone" "$earlier") || return 64
    echo "mutation: $group: rerunning the lines of $covered survivors and uncovered mutants of $rerun"
  fi

  local args=(-f "$config" --skip-version-check --output "$out")
  [ -n "$concurrency" ] && args+=(--concurrency "$concurrency")
  [ -n "$since" ] && args+=("--since:$(git -C "$root" rev-parse "$since")")
  local started status=0
  started=$(date +%s)
  (cd "$clone/$dir" && dotnet tool restore >/dev/null && dotnet stryker "${args[@]}") || status=$?
  local minutes report
  minutes=$(( ($(date +%s) - started + 59) / 60 ))
  report=$(find "$out" -name mutation-report.json | head -n 1)
  if [ -z "$report" ]; then
    echo "mutation: $group produced no report (no changed file to mutate, or the run failed; exit $status) in $minutes min"
    return "$status"
  fi

  local failed=$status i=0 together=""
  [ $# -gt 1 ] && together=" (one run for $group)"
  if [ -n "$earlier" ]; then
    merge_reports "$earlier" "$report" "$(dirname "$report")/mutation-report-merged.json"
    report="$(dirname "$report")/mutation-report-merged.json"
    together="$together (the earlier report's mutants, with the new status of every one run again)"
  fi
  for name in "$@"; do
    read -r score killed timeout survived nocoverage compile <<<"$(summarize "$report" "${configs[$i]}")"
    i=$((i + 1))
    echo "mutation: $name score $score% (killed $killed, timeout $timeout, survived $survived, no coverage $nocoverage; compile errors $compile) in $minutes min$together"
    if [ "$score" != "n/a" ] && awk -v s="$score" -v b="$break_at" 'BEGIN { exit !(s < b) }'; then
      echo "mutation: $name is below --break-at $break_at" >&2
      failed=1
    fi
  done

  return "$failed"
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
rerun=""
while [ $# -gt 0 ]; do
  case "$1" in
    --since) [ $# -ge 2 ] || usage "--since needs a ref"; since=$2; shift 2 ;;
    --break-at) [[ ${2:-} =~ ^[0-9]+$ ]] && [ "$2" -le 100 ] || usage "--break-at needs a number from 0 to 100"; break_at=$2; shift 2 ;;
    --concurrency) [[ ${2:-} =~ ^[1-9][0-9]*$ ]] || usage "--concurrency needs a positive number"; concurrency=$2; shift 2 ;;
    --rerun) [ -f "${2:-}" ] || usage "--rerun needs the json report of an earlier run"; rerun=$(realpath "$2"); shift 2 ;;
    all) read -r -a selected <<<"$names"; shift ;;
    -*) usage "unknown option '$1'" ;;
    *) [ -n "$(dir_of "$1")" ] || usage "unknown target '$1'"; selected+=("$1"); shift ;;
  esac
done
[ ${#selected[@]} -gt 0 ] || usage "no target"
[ -z "$since" ] || [ -z "$rerun" ] || usage "--since and --rerun cannot be combined"
[ -z "$since" ] || git -C "$root" rev-parse --verify --quiet "$since^{commit}" >/dev/null || usage "--since: '$since' is not a commit of this repository"

# Targets of one test project run together, in the order first named.
failed=0
done_dirs=" "
for name in "${selected[@]}"; do
  dir=$(dir_of "$name")
  case "$done_dirs" in *" $dir "*) continue ;; esac
  done_dirs="$done_dirs$dir "
  group=()
  for other in "${selected[@]}"; do
    [ "$(dir_of "$other")" = "$dir" ] && group+=("$other")
  done

  run_group "$dir" "$since" "$break_at" "$concurrency" "$rerun" "${group[@]}" || failed=1
done
exit "$failed"
