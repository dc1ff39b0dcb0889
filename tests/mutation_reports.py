"""The json work of tests/mutation.sh: Stryker configs and reports.

  mutation_reports.py summarize REPORT CONFIG          prints "score killed timeout survived nocoverage compile"
  mutation_reports.py combine OUT CONFIG...            writes one config that runs what all of them run
  mutation_reports.py narrow CONFIG CLONE REPORT       narrows CONFIG to the lines of REPORT's survivors
  mutation_reports.py merge EARLIER RERUN OUT          writes EARLIER with the statuses RERUN gave again

A config's mutate globs select files as Stryker's do: "**/" is any run of folders, "*" any part of a name, and a
leading "!" excludes.
"""
import json
import os
import re
import sys

LEFT = ("Survived", "NoCoverage")


def regex(glob):
    out, i = "", 0
    while i < len(glob):
        if glob.startswith("**/", i):
            out, i = out + "(?:.*/)?", i + 3
        elif glob[i] == "*":
            out, i = out + "[^/]*", i + 1
        else:
            out, i = out + re.escape(glob[i]), i + 1
    return re.compile("(?:^|.*/)" + out + "$")


def selector(globs):
    include = [regex(g) for g in globs if not g.startswith("!")]
    exclude = [regex(g[1:]) for g in globs if g.startswith("!")]
    return lambda path: any(r.match(path) for r in include) and not any(r.match(path) for r in exclude)


def in_repository(path):
    """A report's absolute path (in some earlier clone) as a path inside the repository."""
    path = path.replace("\\", "/")
    for top in ("/src/", "/simulation/", "/fixtures/"):
        at = path.find(top)
        if at >= 0:
            return path[at + 1:]
    return path


def summarize(report_path, config_path):
    selected = selector(json.load(open(config_path))["stryker-config"]["mutate"])
    counts = {}
    for path, f in json.load(open(report_path))["files"].items():
        if not selected(path.replace("\\", "/")):
            continue
        for m in f["mutants"]:
            counts[m["status"]] = counts.get(m["status"], 0) + 1
    k, t, s, n, c = (counts.get(x, 0) for x in ("Killed", "Timeout", "Survived", "NoCoverage", "CompileError"))
    tested = k + t + s + n
    print(f"{100.0 * (k + t) / tested:.2f}" if tested else "n/a", k, t, s, n, c)


def combine(out, first, *rest):
    # An exclusion of one config that another includes by the same glob (a slice that leaves out its neighbour's
    # files) is dropped, so that the neighbour's files stay mutated.
    config = json.load(open(first))
    settings = config["stryker-config"]
    others = [json.load(open(other))["stryker-config"] for other in rest]
    every = [settings["mutate"]] + [other["mutate"] for other in others]
    filters = [settings.get("test-case-filter")] + [other.get("test-case-filter") for other in others]
    included = {g for mutate in every for g in mutate if not g.startswith("!")}
    globs = []
    for mutate in every:
        globs += [g for g in mutate if g not in globs and not (g.startswith("!") and g[1:] in included)]
    settings["mutate"] = globs
    if all(filters):
        parts = []
        for f in filters:
            parts += [p for p in f.split("|") if p not in parts]
        settings["test-case-filter"] = "|".join(parts)
    else:
        settings.pop("test-case-filter", None)
    json.dump(config, open(out, "w"), indent=2)


def narrow(config_path, clone, report_path):
    # Whole lines, from each mutant's first line to its last, one span per run of adjacent lines: Stryker mutates
    # what a `path{start..end}` span (in characters) contains.
    config = json.load(open(config_path))
    settings = config["stryker-config"]
    globs = settings["mutate"]
    selected = selector(globs)
    patterns, count = [], 0
    for path, f in sorted(json.load(open(report_path))["files"].items()):
        rel = in_repository(path)
        if not selected(rel):
            continue
        left = [m for m in f["mutants"] if m["status"] in LEFT]
        if not left:
            continue
        source = open(os.path.join(clone, rel), encoding="utf-8-sig", newline="").read()
        if source.replace("\r\n", "\n") != f["source"].replace("\r\n", "\n"):
            sys.exit(f"error: --rerun: {rel} changed since the report; run the whole target")
        starts = [0] + [i + 1 for i, ch in enumerate(source) if ch == "\n"] + [len(source)]
        runs = []
        for first, last in sorted({(m["location"]["start"]["line"], m["location"]["end"]["line"]) for m in left}):
            if runs and first <= runs[-1][1] + 1:
                runs[-1][1] = max(runs[-1][1], last)
            else:
                runs.append([first, last])
        patterns += [f"**/{rel.split('/', 1)[1]}{{{starts[first - 1]}..{starts[last] - 1}}}" for first, last in runs]
        count += len(left)
    if not patterns:
        sys.exit("error: --rerun: the report has no survivor in these targets' files")
    settings["mutate"] = patterns + [g for g in globs if g.startswith("!")]
    json.dump(config, open(config_path, "w"), indent=2)
    print(count)


def merge(earlier_path, rerun_path, out):
    def key(rel, m):
        loc = m["location"]
        start, end = loc["start"], loc["end"]
        return (rel, start["line"], start["column"], end["line"], end["column"], m["mutatorName"], m.get("replacement"))

    earlier = json.load(open(earlier_path))
    fresh = {}
    for path, f in json.load(open(rerun_path))["files"].items():
        for m in f["mutants"]:
            if m["status"] not in ("Ignored", "CompileError"):
                fresh[key(in_repository(path), m)] = m["status"]
    for path, f in earlier["files"].items():
        for m in f["mutants"]:
            m["status"] = fresh.get(key(in_repository(path), m), m["status"])
    json.dump(earlier, open(out, "w"))


COMMANDS = {"summarize": summarize, "combine": combine, "narrow": narrow, "merge": merge}

if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1] not in COMMANDS:
        sys.exit(f"error: expected a command: {', '.join(COMMANDS)}")
    COMMANDS[sys.argv[1]](*sys.argv[2:])
