#!/usr/bin/env bash
# test_reserve.sh - `muster reserve` against a fake API server: the exact
# request it sends, its retries, and its refusals.
#
# Usage: bash test_reserve.sh <muster-binary> <test-dir>
# The fake server (python3 http.server) answers PATCHes with the statuses
# listed in $WORK/statuses, one per request (the last one repeats), and
# records each request (method, path, content type, authorization, body).
set -u
MUSTER=${1:?usage: test_reserve.sh <muster-binary> <test-dir>}
WORK=$(mktemp -d)
SERVER_PID=
FAILS=0
trap '[ -n "$SERVER_PID" ] && kill "$SERVER_PID" 2>/dev/null; rm -rf "$WORK"' EXIT
unset KUBECONFIG KUBERNETES_SERVICE_HOST KUBERNETES_SERVICE_PORT

command -v python3 >/dev/null || { echo "test_reserve: python3 is needed"; exit 1; }
if ! "$MUSTER" reserve --help >/dev/null 2>&1; then
    echo "test_reserve: $MUSTER has no 'reserve' command (add reserve_main to main.c's table)"
    exit 1
fi

cat >"$WORK/server.py" <<'EOF'
import http.server, json, os, sys
work = sys.argv[1]
class H(http.server.BaseHTTPRequestHandler):
    def do_PATCH(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0))).decode()
        with open(os.path.join(work, "statuses")) as f:
            statuses = [int(s) for s in f.read().split()]
        reqs = os.path.join(work, "requests")
        n = sum(1 for _ in open(reqs)) if os.path.exists(reqs) else 0
        status = statuses[min(n, len(statuses) - 1)]
        with open(reqs, "a") as f:
            f.write(json.dumps({"method": "PATCH", "path": self.path,
                                "content_type": self.headers.get("Content-Type"),
                                "authorization": self.headers.get("Authorization"),
                                "body": json.loads(body)}) + "\n")
        if status == 200:
            reply = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "x"}}
        else:
            reply = {"kind": "Status", "apiVersion": "v1", "status": "Failure",
                     "message": "pods \"x\" is forbidden: fake says no", "code": status}
        data = json.dumps(reply).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
    def log_message(self, *a):
        pass
srv = http.server.HTTPServer(("127.0.0.1", 0), H)
with open(os.path.join(work, "port.tmp"), "w") as f:
    f.write(str(srv.server_address[1]))
os.rename(os.path.join(work, "port.tmp"), os.path.join(work, "port"))
srv.serve_forever()
EOF
echo 200 >"$WORK/statuses"
python3 "$WORK/server.py" "$WORK" &
SERVER_PID=$!
for _ in $(seq 50); do [ -f "$WORK/port" ] && break; sleep 0.1; done
PORT=$(cat "$WORK/port") || { echo "test_reserve: fake server did not start"; exit 1; }

cat >"$WORK/kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: fake
  cluster:
    server: http://127.0.0.1:$PORT
users:
- name: reserve
  user:
    token: sekret
contexts:
- name: fake
  context: {cluster: fake, user: reserve}
current-context: fake
EOF
cat >"$WORK/unreachable" <<EOF
apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "http://127.0.0.1:1"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
EOF

fail() { echo "FAIL $CASE: $*"; FAILS=$((FAILS + 1)); }
start() { CASE=$1; FAILS_BEFORE=$FAILS; }
pass() { [ "$FAILS" -eq "$FAILS_BEFORE" ] && echo "ok   $CASE"; }

# run STATUSES EXPECTED_EXIT ENV... -- ARGS...: muster reserve with a fresh request log.
run() {
    local statuses=$1 want=$2 envs=() args=()
    shift 2
    while [ $# -gt 0 ] && [ "$1" != "--" ]; do envs+=("$1"); shift; done
    shift
    args=("$@")
    echo "$statuses" >"$WORK/statuses"
    rm -f "$WORK/requests"
    env -i PATH="$PATH" "${envs[@]}" "$MUSTER" reserve "${args[@]}" \
        >"$WORK/out" 2>"$WORK/err"
    GOT=$?
    [ "$GOT" -eq "$want" ] || fail "exit $GOT, want $want; stderr: $(cat "$WORK/err")"
}

nrequests() { [ -f "$WORK/requests" ] && wc -l <"$WORK/requests" || echo 0; }

# check_request N DEVICE: the Nth request is exactly the merge patch for DEVICE.
check_request() {
    python3 - "$WORK/requests" "$1" "$2" <<'EOF' || fail "request $1 is not what was expected"
import json, sys
reqs = [json.loads(l) for l in open(sys.argv[1])]
r = reqs[int(sys.argv[2]) - 1]
want = {"method": "PATCH", "path": "/api/v1/namespaces/gpu-sharing/pods/gpu-reservation-n1-g0",
        "content_type": "application/merge-patch+json", "authorization": "Bearer sekret",
        "body": {"metadata": {"annotations": {"muster.dev/gpu-device": sys.argv[3]}}}}
if r != want:
    print("got ", json.dumps(r, sort_keys=True))
    print("want", json.dumps(want, sort_keys=True))
    sys.exit(1)
EOF
}

POD=(POD_NAME=gpu-reservation-n1-g0 POD_NAMESPACE=gpu-sharing)
UUID=GPU-5f3c9a2e-8d1b-4c7a-9e21-0b6f4d2a1c3e

start uuid_once
run 200 0 "${POD[@]}" NVIDIA_VISIBLE_DEVICES=$UUID -- --once --kubeconfig "$WORK/kubeconfig"
[ "$(nrequests)" -eq 1 ] || fail "$(nrequests) requests, want 1"
check_request 1 "$UUID"
grep -q "holds GPU $UUID" "$WORK/out" || fail "stdout does not say which GPU: $(cat "$WORK/out")"
pass

start index_once
run 200 0 "${POD[@]}" NVIDIA_VISIBLE_DEVICES=3 -- --once --kubeconfig "$WORK/kubeconfig"
check_request 1 3
pass

start retries_server_errors
run "503 500 200" 0 "${POD[@]}" NVIDIA_VISIBLE_DEVICES=$UUID -- --once --kubeconfig "$WORK/kubeconfig"
[ "$(nrequests)" -eq 3 ] || fail "$(nrequests) requests, want 3 (two retries)"
check_request 3 "$UUID"
pass

start forbidden_is_not_retried
run 403 1 "${POD[@]}" NVIDIA_VISIBLE_DEVICES=$UUID -- --once --kubeconfig "$WORK/kubeconfig"
[ "$(nrequests)" -eq 1 ] || fail "$(nrequests) requests, want 1"
grep -q "403" "$WORK/err" && grep -q "fake says no" "$WORK/err" ||
    fail "stderr does not carry the status and message: $(cat "$WORK/err")"
pass

start gives_up_after_attempts
run 503 1 "${POD[@]}" NVIDIA_VISIBLE_DEVICES=$UUID -- --once --attempts 2 --kubeconfig "$WORK/kubeconfig"
[ "$(nrequests)" -eq 2 ] || fail "$(nrequests) requests, want 2"
pass

start unreachable
run 200 1 "${POD[@]}" NVIDIA_VISIBLE_DEVICES=$UUID -- --once --attempts 2 --kubeconfig "$WORK/unreachable"
grep -q "cannot write muster.dev/gpu-device on pod gpu-sharing/gpu-reservation-n1-g0" "$WORK/err" ||
    fail "stderr: $(cat "$WORK/err")"
pass

# Refusals: exit 2, a message naming the problem, and no request at all.
refuse() {
    start "$1"
    local want=$2
    shift 2
    run 200 2 "$@" -- --once --kubeconfig "$WORK/kubeconfig"
    grep -q -- "$want" "$WORK/err" || fail "stderr lacks \"$want\": $(cat "$WORK/err")"
    [ "$(nrequests)" -eq 0 ] || fail "sent $(nrequests) requests"
    pass
}
refuse unset "NVIDIA_VISIBLE_DEVICES is not set" "${POD[@]}"
refuse empty "NVIDIA_VISIBLE_DEVICES is empty" "${POD[@]}" NVIDIA_VISIBLE_DEVICES=
refuse all "did not allocate a GPU" "${POD[@]}" NVIDIA_VISIBLE_DEVICES=all
refuse void "was given no GPU" "${POD[@]}" NVIDIA_VISIBLE_DEVICES=void
refuse none "was given no GPU" "${POD[@]}" NVIDIA_VISIBLE_DEVICES=none
refuse list "several devices" "${POD[@]}" NVIDIA_VISIBLE_DEVICES=GPU-a,GPU-b
refuse volume_mounts "volume mounts" "${POD[@]}" NVIDIA_VISIBLE_DEVICES=/var/run/nvidia-container-devices
refuse junk "neither a GPU UUID" "${POD[@]}" 'NVIDIA_VISIBLE_DEVICES=GPU 1;rm'
refuse no_pod_name "POD_NAME and POD_NAMESPACE" POD_NAMESPACE=gpu-sharing NVIDIA_VISIBLE_DEVICES=0

start bad_flag
run 200 2 -- --frobnicate
grep -q "unknown flag --frobnicate" "$WORK/err" || fail "stderr: $(cat "$WORK/err")"
pass

start help
run 200 0 -- --help
grep -q "Usage: muster reserve" "$WORK/out" || fail "no usage on stdout"
pass

# Without --once it holds the device until SIGTERM, then exits 0.
start holds_until_sigterm
echo 200 >"$WORK/statuses"
rm -f "$WORK/requests"
env -i PATH="$PATH" "${POD[@]}" NVIDIA_VISIBLE_DEVICES=$UUID "$MUSTER" reserve \
    --kubeconfig "$WORK/kubeconfig" >"$WORK/out" 2>"$WORK/err" &
PID=$!
for _ in $(seq 50); do [ "$(nrequests)" -ge 1 ] && break; sleep 0.1; done
sleep 0.3
if kill -0 "$PID" 2>/dev/null; then
    kill -TERM "$PID"
    wait "$PID"
    GOT=$?
    [ "$GOT" -eq 0 ] || fail "exit $GOT after SIGTERM, want 0"
else
    wait "$PID"
    fail "exited ($?) before SIGTERM: $(cat "$WORK/err")"
fi
check_request 1 "$UUID"
pass

if [ "$FAILS" -ne 0 ]; then
    echo "test_reserve: $FAILS failure(s)"
    exit 1
fi
echo "test_reserve: all passed"
