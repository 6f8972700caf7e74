#!/usr/bin/env bash
# test_cases.sh MUSTER TESTDIR - the scheduling cases ported from KAI-Scheduler's
# and Volcano's own scheduler tests (test/cases/, see its README.md).
#
# Each case is a YAML file for `muster simulate -f`; its header comment names
# the upstream test and carries `# expect: <python expression>` lines, checked
# against the parsed JSON output. One line per case: `ok <case>`,
# `FAIL <case>: <first failing expression>` or `skip <case>: <reason>`; the last
# line is `cases: N passed, M failed, K skipped`.
#
# Environment: CASES=<substring> runs only the cases whose path contains it;
# CASES_VERBOSE=1 prints every failing expression and the output of a failing case.
set -u
MUSTER=${1:?usage: test_cases.sh <muster-binary> <test-dir>}
DIR=${2:?usage: test_cases.sh <muster-binary> <test-dir>}/cases
command -v python3 >/dev/null || { echo "test_cases: python3 is needed"; exit 1; }
exec python3 - "$MUSTER" "$DIR" <<'PY'
import glob, json, os, re, shlex, subprocess, sys

muster, root = os.path.abspath(sys.argv[1]), sys.argv[2]
only = os.environ.get("CASES", "")
verbose = os.environ.get("CASES_VERBOSE", "") not in ("", "0")

# ---- Kubernetes quantities -------------------------------------------------
SUFFIX = {"": 1, "m": 1e-3, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15,
          "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50}

def qty(v):
    """A quantity string ("500m", "4Gi", "0.5") or number as a float."""
    if v is None:
        return None
    if isinstance(v, (int, float)):
        return float(v)
    m = re.fullmatch(r"([+-]?[0-9.]+(?:[eE][+-]?[0-9]+)?)([a-zA-Z]*)", v.strip())
    if not m or m.group(2) not in SUFFIX:
        raise ValueError("not a quantity: %r" % v)
    return float(m.group(1)) * SUFFIX[m.group(2)]

assert qty("500m") == 0.5 and qty("4Gi") == 4 * 2**30 and qty("7500M") == 7.5e9 and qty("2") == 2.0

# ---- the helpers the expressions see ---------------------------------------
def helpers(j):
    pods = {p["name"]: p for p in j["pods"]}
    queues = {q["name"]: q for q in j["queues"]}
    evictions = j.get("evictions", [])

    def members(key):
        """Pods of a gang, by key "ns/name" or bare name; else the pod so named."""
        ps = [p for p in j["pods"] if p["gang"] is not None and
              (p["gang"] == key or p["gang"].split("/", 1)[1] == key)]
        if not ps and key in pods:
            ps = [pods[key]]
        if not ps:
            raise KeyError("no gang or pod %r" % key)
        return ps

    def amount(q, field, res):
        return qty(queues[q][field][res])

    h = {
        "j": j, "pods": pods, "queues": queues, "s": j["summary"], "evictions": evictions,
        "qty": qty,
        "node": lambda pod: pods[pod]["node"],
        "reason": lambda pod: pods[pod]["reason"] or "",
        "placed": lambda key: all(p["node"] is not None for p in members(key)),
        "pending": lambda key: all(p["node"] is None for p in members(key)),
        "running": lambda key: sum(p["node"] is not None for p in members(key)),
        "nodes_of": lambda key: sorted({p["node"] for p in members(key) if p["node"]}),
        "evicted": lambda pod: any(e["name"] == pod or "%s/%s" % (e["namespace"], e["name"]) == pod
                                   for e in evictions),
        "victims": lambda: {e["gang"].split("/", 1)[-1] if e.get("gang") else e["name"]
                            for e in evictions},
        "evicted_pods": lambda: {e["name"] for e in evictions},
        "gangs": {g["key"]: g for g in j["gangs"]},
        # the gangs a RayJob or RayService made ("RayJob lab/train"), in key order
        "owned": lambda owner: [g for g in j["gangs"] if g.get("owner") == owner],
    }
    for res, short in (("gpu", "gpu"), ("cpu", "cpu"), ("memory", "mem")):
        h[short] = (lambda r: lambda q: amount(q, "allocated", r))(res)
        h["fair_" + short] = (lambda r: lambda q: amount(q, "fairShare", r))(res)
    # Fair over time: U' as published, the fair share without it, the timeline's per-queue
    # tally and its events.
    h["recent_gpu"] = lambda q: queues[q]["recentUsage"]["gpu"]
    h["plain_gpu"] = lambda q: amount(q, "fairShareWithoutRecentUsage", "gpu")
    timeline = j.get("timeline") or {"queues": [], "events": []}
    h["tq"] = lambda q: next(x for x in timeline["queues"] if x["name"] == q)
    h["events"] = lambda what=None, gang=None: [
        e for e in timeline["events"] if (what is None or e["event"] == what) and
        (gang is None or e["gang"] == gang or e["gang"].split("/", 1)[-1] == gang)]
    return h

# ---- one case --------------------------------------------------------------
def header(path):
    """The leading comment block as (key, value) pairs: `# key: value`."""
    out = []
    with open(path) as f:
        for line in f:
            if not line.startswith("#"):
                break
            m = re.match(r"# ([a-z]+):(?: (.*))?$", line.rstrip("\n"))
            if m:
                out.append((m.group(1), (m.group(2) or "").strip()))
    return out

def run_case(path):
    """Returns ("ok"|"FAIL"|"skip", detail, [all failures])."""
    h = header(path)
    skip = [v for k, v in h if k == "skip"]
    if skip:
        return "skip", skip[0], []
    expects = [v for k, v in h if k == "expect"]
    if not expects:
        return "FAIL", "no # expect: line", []
    args = []
    for k, v in h:
        if k == "args":
            args += shlex.split(v)
    proc = subprocess.run([muster, "simulate", "-f", os.path.basename(path)] + args,
                          cwd=os.path.dirname(path), capture_output=True, text=True, timeout=120)
    if proc.returncode != 0:
        err = (proc.stderr.strip().splitlines() or [""])[0]
        return "FAIL", "exit %d: %s" % (proc.returncode, err), []
    try:
        j = json.loads(proc.stdout)
        env = helpers(j)
    except (ValueError, KeyError, TypeError) as e:
        return "FAIL", "output: %s" % e, []
    failures = []
    for expr in expects:
        try:
            # One namespace as globals, so comprehensions in an expression see the helpers.
            ok = eval(expr, dict(env, __builtins__=__builtins__))
        except Exception as e:  # a missing key is a failed expectation
            failures.append("%s  [%s: %s]" % (expr, type(e).__name__, e))
            continue
        if not ok:
            failures.append(expr)
    if failures:
        if verbose:
            print(proc.stdout, file=sys.stderr)
        return "FAIL", failures[0], failures
    return "ok", "", []

paths = sorted(p for p in glob.glob(os.path.join(root, "**", "*.yaml"), recursive=True)
               if only in os.path.relpath(p, root))
counts = {"ok": 0, "FAIL": 0, "skip": 0}
for path in paths:
    name = os.path.relpath(path, root)[:-len(".yaml")]
    status, detail, failures = run_case(path)
    counts[status] += 1
    if status == "ok":
        print("ok", name)
    else:
        more = " (+%d more)" % (len(failures) - 1) if len(failures) > 1 and not verbose else ""
        print("%s %s: %s%s" % (status, name, detail, more))
        if verbose:
            for f in failures[1:]:
                print("     also: %s" % f)
    sys.stdout.flush()
print("cases: %d passed, %d failed, %d skipped" % (counts["ok"], counts["FAIL"], counts["skip"]))
sys.exit(1 if counts["FAIL"] or not paths else 0)
PY
