#!/usr/bin/env bash
# test_simulate.sh MUSTER TESTDIR - runs `muster simulate` on the walkthrough's
# manifests and on bad input, and checks what matters in what it prints.
set -u
MUSTER=$1
FIX=$2/fixtures/simulate
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fails=0

fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# run NAME ARGS...: stdout in $TMP/NAME.out, stderr in $TMP/NAME.err, exit code in $rc
run() {
    local name=$1
    shift
    (cd "$FIX" && "$MUSTER" simulate "$@") >"$TMP/$name.out" 2>"$TMP/$name.err"
    rc=$?
}

# check NAME PYTHON-EXPR: the expression holds for j, the parsed JSON output
check() {
    local name=$1 expr=$2
    python3 - "$TMP/$name.out" "$expr" <<'PY' || fail "$name: $expr"
import json, sys
j = json.load(open(sys.argv[1]))
pods = {p["name"]: p for p in j["pods"]}
queues = {q["name"]: q for q in j["queues"]}
s = j["summary"]
if not eval(sys.argv[2]):
    print(json.dumps(j, indent=1), file=sys.stderr)
    sys.exit(1)
PY
}

# The demo: head and two 1-GPU workers together on gpu-lab-worker.
run demo -f nodes.yaml -f demo.yaml
[ "$rc" = 0 ] || fail "demo: exit $rc: $(cat "$TMP/demo.err")"
check demo '[p["name"] for p in j["pods"]] == ["demo-head", "demo-workers-worker-0", "demo-workers-worker-1"]'
check demo 'all(p["node"] == "gpu-lab-worker" and p["reason"] is None and p["gang"] == "kuberay-lab/demo" for p in j["pods"])'
check demo '[p["gpus"] for p in j["pods"]] == [0, 1, 1]'
check demo 'queues["default"]["allocated"] == {"cpu": "6", "memory": "12Gi", "gpu": "2"}'
check demo 's == {"podsPlaced": 3, "podsPending": 0, "gangsPlaced": 1, "gangsPending": 0, "gpusUsed": 2, "gpuFragmentation": 0, "gpusLowerBound": 2}'
check demo 'list(j) == ["pods", "gangs", "queues", "evictions", "summary"] and list(j["pods"][0]) == ["namespace", "name", "gang", "queue", "node", "gpus", "gpuFraction", "gpuGroup", "reason", "why"]'
check demo 'j["evictions"] == [] and list(j["queues"][0]) == ["name", "parent", "allocated", "fairShare", "recentUsage", "fairShareWithoutRecentUsage"] and list(j["queues"][0]["fairShare"]) == ["cpu", "memory", "gpu"]'
# No time passes without a timeline: nobody used anything lately, fair shares are today's.
check demo 'all(q["recentUsage"] == {"cpu": 0, "memory": 0, "gpu": 0} and q["fairShareWithoutRecentUsage"] == q["fairShare"] for q in j["queues"])'
check demo '[g["key"] for g in j["gangs"]] == ["kuberay-lab/demo"] and list(j["gangs"][0]) == ["key", "queue", "state", "composition", "conflict", "topology", "domain", "reason", "why", "owner", "upgradeOf", "held"]'
check demo 'j["gangs"][0]["state"] == "Bound" and j["gangs"][0]["reason"] is None'

# The same objects as kubectl prints them: a List (tab-indented JSON), a typed NodeList from
# the API server (items without kind), JSON values one per line (jq -c).
for form in list stream nodelist; do
    if [ $form = nodelist ]; then run $form -f nodelist.json -f demo.yaml; else run $form -f $form.json; fi
    [ "$rc" = 0 ] || fail "$form: exit $rc: $(cat "$TMP/$form.err")"
    check $form '[p["name"] for p in j["pods"]] == ["demo-head", "demo-workers-worker-0", "demo-workers-worker-1"]'
    check $form 'all(p["node"] == "gpu-lab-worker" for p in j["pods"]) and s["gpusUsed"] == 2'
done

# 1-GPU head + four 0.5 workers = 3 GPUs; a queue limit of 2 keeps all five pending.
run limit2 -f nodes.yaml -f queue-limit2.yaml -f shared.yaml
[ "$rc" = 0 ] || fail "limit2: exit $rc"
check limit2 'len(j["pods"]) == 5 and all(p["node"] is None for p in j["pods"])'
check limit2 'all(p["reason"] == "queue team-a: limit 2 GPUs, 0 GPUs in use, the gang needs 3 GPUs; never: more than the limit" for p in j["pods"])'
check limit2 'all(p["why"] == {"kind": "queue-limit", "never": True, "gang": "lab/shared", "queue": "team-a", "resource": "gpu", "limit": "2", "used": "0", "asked": "3"} for p in j["pods"])'
check limit2 'queues["team-a"]["allocated"]["gpu"] == "0"'
check limit2 's["podsPlaced"] == 0 and s["podsPending"] == 5 and s["gangsPending"] == 1 and s["gpusUsed"] == 0'

# ... and a limit of 3 places all five on exactly three devices.
run limit3 -f nodes.yaml -f queue-limit3.yaml -f shared.yaml
[ "$rc" = 0 ] || fail "limit3: exit $rc"
check limit3 'all(p["node"] == "gpu-lab-worker" for p in j["pods"])'
check limit3 'pods["shared-head"]["gpus"] == 1 and pods["shared-head"]["gpuGroup"] is None'
check limit3 'all(pods["shared-half-worker-%d" % i]["gpuFraction"] == 0.5 for i in range(4))'
check limit3 'len({pods["shared-half-worker-%d" % i]["gpuGroup"] for i in range(4)}) == 2'
check limit3 'None not in {pods["shared-half-worker-%d" % i]["gpuGroup"] for i in range(4)}'
check limit3 'queues["team-a"]["allocated"] == {"cpu": "3", "memory": "6Gi", "gpu": "3"}'
check limit3 's["gpusUsed"] == 3 and s["gpusLowerBound"] == 3 and s["gangsPlaced"] == 1'

# Spread still keeps two halves per device inside the limit: the gang needs 3.
run spread -f nodes.yaml -f queue-limit3.yaml -f shared.yaml --strategy spread
[ "$rc" = 0 ] || fail "spread: exit $rc"
check spread 's["podsPlaced"] == 5 and s["gpusLowerBound"] == 3'

# Fragmentation packs them as tightly, and nothing is lost for the shapes seen.
run frag -f nodes.yaml -f queue-limit3.yaml -f shared.yaml --strategy fragmentation
[ "$rc" = 0 ] || fail "frag: exit $rc"
check frag 's["podsPlaced"] == 5 and s["gpusUsed"] == 3 and s["gpuFragmentation"] == 0'

# Two gangs of 6 GPUs on 8: the first whole, the second pending whole.
run competing -f nodes.yaml -f competing.yaml
[ "$rc" = 0 ] || fail "competing: exit $rc"
check competing 'all(p["node"] == "gpu-lab-worker" for p in j["pods"] if p["gang"] == "lab/alpha")'
check competing 'all(p["node"] is None and p["reason"] for p in j["pods"] if p["gang"] == "lab/beta")'
check competing 's["gangsPlaced"] == 1 and s["gangsPending"] == 1 and s["gpusUsed"] == 6 and s["podsPending"] == 4'

# Every gang source and what they name, read in any order: KAI's Queue, PriorityClasses,
# KAI's and Volcano's PodGroups with subgroups, the Workload API (v1alpha2 and v1beta1).
run sources -f nodes.yaml -f sources.yaml
[ "$rc" = 0 ] || fail "sources: exit $rc: $(cat "$TMP/sources.err")"
check sources '{p["name"]: p["gang"] for p in j["pods"]} == {"training-driver": "ml/training", "training-worker-0": "ml/training", "training-worker-1": "ml/training", "solo-0": "ml/solo", "solo-1": "ml/solo", "kai-job-0": "test/kai-job", "kai-job-1": "test/kai-job", "vc-master": "vc/vc-job", "vc-worker": "vc/vc-job"}'
check sources '[g["key"] for g in j["gangs"]] == ["ml/solo", "ml/training", "test/kai-job", "vc/vc-job"]'
check sources 'pods["training-worker-0"]["queue"] == "team-kai" and "team-kai" in queues'
check sources 'all(set(g) == {"key", "queue", "state", "composition", "conflict", "topology", "domain", "reason", "why", "owner", "upgradeOf", "held"} for g in j["gangs"])'

# The table view names the same things.
run table -f nodes.yaml -f queue-limit3.yaml -f shared.yaml -o table
[ "$rc" = 0 ] || fail "table: exit $rc"
grep -q '^NAMESPACE *NAME *GPU *NODE *GANG *QUEUE *REASON$' "$TMP/table.out" || fail "table: header"
grep -q '^lab *shared-half-worker-0 *0.5 *gpu-lab-worker *lab/shared *team-a' "$TMP/table.out" ||
    fail "table: a shared worker row"
grep -q '^QUEUE *PARENT *CPU *MEMORY *GPU *FAIR-CPU *FAIR-MEMORY *FAIR-GPU$' "$TMP/table.out" || fail "table: queue header"
grep -q '^team-a *<none> *3 *6Gi *3 ' "$TMP/table.out" || fail "table: queue row"
grep -q '^GANG *QUEUE *STATE *COMPOSITION *CONFLICT *DOMAIN *REASON$' "$TMP/table.out" || fail "table: gang header"
grep -q '^lab/shared *team-a *Bound ' "$TMP/table.out" || fail "table: gang row"
grep -q 'GPUs: 3 used, lower bound 3' "$TMP/table.out" || fail "table: summary"

# Names Kubernetes does not validate, full of escape sequences and CR LF (issue 21): the table
# shows them escaped, so no line is forged and nothing acts on the terminal; the JSON and the
# HTML page carry them as JSON escapes, which read back as the same names.
# safe FILE: no control byte but newline, no C1 control (U+0080..U+009F), no DEL
safe() {
    python3 - "$1" <<'PY'
import re, sys
data = open(sys.argv[1], "rb").read()
bad = re.search(rb"[\x00-\x09\x0b-\x1f\x7f]|\xc2[\x80-\x9f]", data)
if bad:
    print("unsafe byte %r at %d" % (bad.group(), bad.start()), file=sys.stderr)
    sys.exit(1)
PY
}
run hostile -f nodes.yaml -f hostile.yaml -o table
[ "$rc" = 0 ] || fail "hostile: exit $rc: $(cat "$TMP/hostile.err")"
safe "$TMP/hostile.out" || fail "hostile: the table is not safe for a terminal"
grep -q '^gang' "$TMP/hostile.out" && fail "hostile: a forged line"
grep -qF 'master^[]0;pwned\x07\r\ngang vc/vc-job is Bound, 9/9 pods 0/1, worker 0/1' "$TMP/hostile.out" ||
    fail "hostile: the Volcano task, escaped"
grep -qF 'sub\u009b2J\u202e 0/1' "$TMP/hostile.out" || fail "hostile: the KAI subgroup, escaped"
grep -qF 'head 1/1, gpu\r^[[1A^[[2Kgang lab/rc is Bound' "$TMP/hostile.out" || fail "hostile: groupName"
grep -qF 'lab       org^[[2J^[[H\r\ngang lab/forged' "$TMP/hostile.out" || fail "hostile: parentQueue"
run hostile-json -f nodes.yaml -f hostile.yaml -o json
safe "$TMP/hostile-json.out" || fail "hostile: the JSON is not safe for a terminal"
check hostile-json '[g["composition"] for g in j["gangs"] if g["key"] == "test/kai-job"] == ["sub\u009b2J\u202e 0/1"]'
check hostile-json 'queues["lab"]["parent"] == "org\x1b[2J\x1b[H\r\ngang lab/forged is Bound, 9/9 pods"'
(cd "$FIX" && "$MUSTER" simulate -f nodes.yaml -f hostile.yaml -o html) >"$TMP/hostile.html" ||
    fail "hostile: -o html"
safe "$TMP/hostile.html" || fail "hostile: the HTML is not safe for a terminal"
[ "$(grep -o '</script>' "$TMP/hostile.html" | wc -l)" = 2 ] || fail "hostile: a name closed a <script>"

# Bad input: exit 2, nothing on stdout, "file:line: what" on stderr.
bad() {
    local file=$1 want=$2
    run bad -f nodes.yaml -f "bad/$file"
    [ "$rc" = 2 ] || fail "bad/$file: exit $rc, want 2"
    [ -s "$TMP/bad.out" ] && fail "bad/$file: printed on stdout"
    grep -qF -- "$want" "$TMP/bad.err" || fail "bad/$file: stderr $(cat "$TMP/bad.err"), want $want"
}
bad unknown-kind.yaml 'bad/unknown-kind.yaml:7: unknown kind Deployment'
bad bad-quantity.yaml 'bad/bad-quantity.yaml:11: Pod: containers[c].resources.requests.cpu: "2x" is not a quantity'
bad missing-name.yaml 'bad/missing-name.yaml:3: Queue: metadata.name missing'
bad duplicate.yaml 'bad/duplicate.yaml:6: Node n1: defined twice'
bad syntax.yaml 'bad/syntax.yaml:5: '
bad raycluster-template.yaml 'bad/raycluster-template.yaml:13: RayCluster default/broken: pod broken-head: containers[ray-head].resources.requests.memory: "4Gb" is not a quantity'
bad duplicate-pod.yaml 'Pod default/demo-head: defined twice'
bad workload-policy.yaml 'bad/workload-policy.yaml:7: Workload: schedulingPolicy.gang.minCount: 0 outside [1, 2147483647]'
bad kai-queue-units.yaml 'bad/kai-queue-units.yaml:6: Queue team-kai: spec.resources.memory.quota: must be a number (MB)'
bad rayjob-mode.yaml 'bad/rayjob-mode.yaml:6: RayJob: spec.submissionMode: "Batch" is not K8sJobMode, SidecarMode, HTTPMode or InteractiveMode'
bad rayjob-submitter.yaml 'bad/rayjob-submitter.yaml:10: RayJob: spec.submitterPodTemplate: containers[ray-job-submitter].resources.requests.cpu: "lots" is not a quantity'
bad kai-subgroup-cycle.yaml 'bad/kai-subgroup-cycle.yaml:9: PodGroup: spec.subGroups[1].parent: "b" forms a cycle (a -> b -> a)'

bad bad-arrival.yaml 'bad/bad-arrival.yaml:7: annotation simulate.muster.dev/arrival: want a duration from the start such as "90m" or "26h", got soon'

# A timeline: team-a's gang (its PodGroup's duration) runs 0-2h; team-b's pod comes at 30m, waits
# for the whole node until 2h, runs to 3h. The run ends when nothing more happens.
run timeline -f nodes.yaml -f timeline.yaml
[ "$rc" = 0 ] || fail "timeline: exit $rc: $(cat "$TMP/timeline.err")"
check timeline 'list(j) == ["pods", "gangs", "queues", "evictions", "summary", "timeline"] and list(j["timeline"]) == ["end", "queues", "events"]'
check timeline '[(e["at"], e["event"], e["gang"]) for e in j["timeline"]["events"]] == [(0, "arrived", "lab/a-1"), (0, "started", "lab/a-1"), (1800, "arrived", "lab/b-solo"), (7200, "finished", "lab/a-1"), (7200, "started", "lab/b-solo"), (10800, "finished", "lab/b-solo")]'
check timeline 'j["timeline"]["end"] == 10800'
check timeline '{q["name"]: (q["gpuHours"], q["waitHours"], q["gangs"], q["started"], q["finished"]) for q in j["timeline"]["queues"] if q["name"].startswith("team")} == {"team-a": (16, 0, 1, 1, 1), "team-b": (8, 1.5, 1, 1, 1)}'
check timeline 'all(p["node"] is None and p["reason"] == "finished" for p in j["pods"]) and s["podsPending"] == 0 and s["podsPlaced"] == 0'
# team-a used more lately, so its recent usage is the larger one at the end.
check timeline 'queues["team-a"]["recentUsage"]["gpu"] > queues["team-b"]["recentUsage"]["gpu"] > 0'
# --until stops it there, and says what waits then.
run until -f nodes.yaml -f timeline.yaml --until 1h
check until 'j["timeline"]["end"] == 3600 and pods["b-solo"]["node"] is None and pods["a-1-0"]["node"] == "gpu-lab-worker"'
run table -f nodes.yaml -f timeline.yaml -o table
[ "$rc" = 0 ] && grep -q '^team-b  *8.00  *1  *1  *1  *0  *1.50  *1.50$' "$TMP/table.out" || fail "timeline table: $(cat "$TMP/table.out")"
run badk -f nodes.yaml --k 0.0001
[ "$rc" = 2 ] && grep -q -- '--k' "$TMP/badk.err" || fail "bad --k: exit $rc"

# Flags.
run nofile -f does-not-exist.yaml
[ "$rc" = 2 ] && [ ! -s "$TMP/nofile.out" ] || fail "missing file: exit $rc"
run noargs
[ "$rc" = 2 ] || fail "no -f: exit $rc"
run badflag -f nodes.yaml --strategy sideways
[ "$rc" = 2 ] && grep -q -- '--strategy' "$TMP/badflag.err" || fail "bad --strategy: exit $rc"
run help --help
[ "$rc" = 0 ] && grep -q 'Usage: muster simulate' "$TMP/help.out" || fail "--help"

if [ "$fails" -gt 0 ]; then
    echo "$fails check(s) failed"
    exit 1
fi
echo "all simulate checks passed"
