#!/usr/bin/env bash
# test_html.sh MUSTER TESTDIR - `muster simulate -o html` opened in a real headless Chromium
# (Debian's package; scripts/deps.sh --test installs it). The page draws itself from the run's
# data with its inline script, so the checks read the DOM Chromium dumps after loading it:
# the attributes they count exist only if the script ran. What it draws is compared with the
# JSON report of the same run: one card per node, one cell per GPU, whole GPUs, shared GPUs
# and their shares, the gang that waits with muster's reason, the queue bars. A screenshot
# is taken too (only its existence is checked, never its pixels).
set -u
MUSTER=$1
FIX=$2/fixtures/simulate
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fails=0

fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

CHROMIUM=${CHROMIUM:-$(command -v chromium || command -v chromium-browser || true)}
if [ -z "$CHROMIUM" ]; then
    echo "FAIL: chromium is not installed (scripts/deps.sh --test installs Debian's chromium)"
    exit 1
fi
echo "browser: $("$CHROMIUM" --version 2>/dev/null)"

# browser ARGS... URL: headless, no network of its own, a fresh profile each time
browser() {
    local profile
    profile=$(mktemp -d "$TMP/profile.XXXXXX")
    timeout 120 "$CHROMIUM" --headless --no-sandbox --disable-gpu --disable-background-networking \
        --disable-component-update --disable-sync --no-first-run --user-data-dir="$profile" "$@" \
        2>>"$TMP/chromium.log"
}

# render NAME FILES...: NAME.html and NAME.json of one run over FILES (copied into $TMP), then
# NAME.dom as Chromium has it after the page's script ran
render() {
    local name=$1
    shift
    (cd "$TMP" && "$MUSTER" simulate "$@" -o html) >"$TMP/$name.html" 2>"$TMP/$name.err" ||
        fail "$name: simulate -o html: exit $?: $(cat "$TMP/$name.err")"
    (cd "$TMP" && "$MUSTER" simulate "$@" -o json) >"$TMP/$name.json" 2>/dev/null ||
        fail "$name: simulate -o json"
    browser --dump-dom "file://$TMP/$name.html" >"$TMP/$name.dom" ||
        fail "$name: chromium --dump-dom: exit $?: $(tail -5 "$TMP/chromium.log")"
}

# check NAME PYTHON-EXPR: holds for the DOM (els: every element's attributes, by(attr, value),
# text(id)) and the JSON report of the same run (run, pods, queues)
check() {
    local name=$1 expr=$2
    python3 - "$TMP/$name.dom" "$TMP/$name.json" "$expr" <<'PY' || fail "$name: $expr"
import json, sys
from collections import Counter
from html.parser import HTMLParser

class Dom(HTMLParser):
    def __init__(self):
        super().__init__()
        self.els, self.open, self.texts = [], [], {}
    def handle_starttag(self, tag, attrs):
        a = dict(attrs, _tag=tag)
        self.els.append(a)
        if tag not in ("meta", "br", "img", "input", "link"):
            self.open.append(a.get("id"))
    def handle_endtag(self, tag):
        if self.open:
            self.open.pop()
    def handle_data(self, data):
        for i in self.open:
            if i:
                self.texts[i] = self.texts.get(i, "") + data

dom = Dom()
dom.feed(open(sys.argv[1], encoding="utf-8").read())
els = dom.els
def by(attr, value=None):
    return [e for e in els if attr in e and (value is None or e[attr] == value)]
def text(i):
    return dom.texts.get(i, "")
run = json.load(open(sys.argv[2]))
pods = run["pods"]
queues = {q["name"]: q for q in run["queues"]}
bound = [p for p in pods if p["node"] is not None]
if not eval(sys.argv[3]):
    print("elements with data-*:", [{k: v for k, v in e.items() if k.startswith("data-")}
                                    for e in els if any(k.startswith("data-") for k in e)],
          file=sys.stderr)
    sys.exit(1)
PY
}

# The packing fixture, read from a path that would end the page's <script> early if the page
# did not escape what it embeds.
odd='in</script><b>/packing.yaml'
mkdir -p "$TMP/${odd%/*}"
cp "$FIX/packing.yaml" "$TMP/$odd"
render packing -f "$odd"

# Nothing on the page can fetch: no URLs, no external scripts, styles or fonts, and a CSP.
if grep -Eq 'https?://|src=|<link|@import|url\(' "$TMP/packing.html"; then
    fail "packing.html refers to something outside itself"
fi
grep -q "Content-Security-Policy\" content=\"default-src 'none'" "$TMP/packing.html" ||
    fail "packing.html has no Content-Security-Policy forbidding fetches"

check packing 'len(by("data-rendered", "true")) == 1 and by("data-rendered")[0]["_tag"] == "body"'
check packing '[e["data-node"] for e in by("data-node")] == ["cpu-0", "gpu-a", "gpu-b"]'
check packing '[e["data-gpus"] for e in by("data-node")] == ["0", "4", "4"]'
check packing 'len(by("data-gpu")) == 8'
# whole GPUs: as many cells as bound pods ask; shared GPUs: one cell per (node, group) in use
check packing 'len(by("data-state", "whole")) == sum(p["gpus"] for p in bound) == 3'
check packing 'len(by("data-state", "shared")) == len({(p["node"], p["gpuGroup"]) for p in bound if p["gpuFraction"]}) == 2'
check packing 'len(by("data-state", "free")) == 3 and not by("data-state", "reserved")'
check packing 'Counter(e["data-gpu"].split("/")[0] for e in by("data-state", "free")) == Counter({"gpu-b": 3})'
check packing 'Counter(e["data-whole"] for e in by("data-whole")) == Counter({p["namespace"] + "/" + p["name"]: p["gpus"] for p in bound if p["gpus"]})'
# each share coloured by its gang and queue, as big as its fraction
check packing 'sorted(e["data-share"] for e in by("data-share")) == sorted(p["namespace"] + "/" + p["name"] for p in bound if p["gpuFraction"])'
check packing 'len(by("data-share")) == 4 and all(e["data-milli"] == "500" and e["data-gang"] == "lab/shared" and e["data-queue"] == "team-a" for e in by("data-share"))'
check packing 'all(e["style"].startswith("height: 50%") for e in by("data-share"))'
# the gang that waits, with the reason the JSON report gives its pods
check packing '[e["data-pending-gang"] for e in by("data-pending-gang")] == ["lab/big"]'
check packing '[e["data-reason"] for e in by("data-reason")] == [next(p["reason"] for p in pods if p["gang"] == "lab/big")] == ["queue team-b: limit 3 GPUs, 2 GPUs in use, the gang needs 2 GPUs"]'
# one bar per queue, filled to what the queue holds
check packing '[e["data-queue-bar"] for e in by("data-queue-bar")] == list(queues) == ["default", "team-a", "team-b"]'
check packing '{e["data-queue-bar"]: e["data-allocated-milli"] for e in by("data-queue-bar")} == {"default": "0", "team-a": "3000", "team-b": "2000"}'
check packing '{q: str(int(float(queues[q]["allocated"]["gpu"]) * 1000)) for q in queues} == {e["data-queue-bar"]: e["data-allocated-milli"] for e in by("data-queue-bar")}'
check packing 'by("id", "summary")[0]["data-gpu-cells"] == "8" and by("id", "summary")[0]["data-gpus-used"] == str(run["summary"]["gpusUsed"]) == "5"'
check packing 'text("files") == "in</script><b>/packing.yaml"'

# A screenshot of the same page: Chromium drew it.
browser --hide-scrollbars --window-size=1280,1000 --screenshot="$TMP/packing.png" \
    "file://$TMP/packing.html" >/dev/null || fail "chromium --screenshot: exit $?"
[ "$(head -c 8 "$TMP/packing.png" 2>/dev/null | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ] ||
    fail "packing.png is not a PNG"

# Nodes and no work: every GPU a free cell, nothing pending.
cp "$FIX/nodes.yaml" "$TMP/nodes.yaml"
render idle -f nodes.yaml
check idle 'len(by("data-rendered", "true")) == 1 and len(by("data-node")) == 2'
check idle 'len(by("data-gpu")) == len(by("data-state", "free")) == 8 and not by("data-share")'
check idle 'not by("data-pending-gang") and "every pod was placed" in text("pending")'

# Nodes grouped by domain of the Topology (block / rack), a gang's domain named in the JSON.
cp "$FIX/topology.yaml" "$TMP/topology.yaml"
render topology -f topology.yaml --strategy binpack
check topology '[e["data-domain"] for e in by("data-domain")] == ["block=b1 / rack=r1", "block=b1 / rack=r2", "block=b2 / rack=r1", "block=b2 / rack=r2"]'
check topology 'len(by("data-node")) == 8 and len(by("data-domain")) == 4'
check topology 'next(g for g in run["gangs"] if g["key"] == "lab/train")["domain"] == "block=b1" and {p["node"][:2] for p in bound} == {"b1"}'

if [ "$fails" -gt 0 ]; then
    echo "$fails check(s) failed"
    exit 1
fi
echo "all html checks passed"
