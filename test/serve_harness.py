"""serve_harness.py - what the test_serve_*.sh scripts share: a `muster serve --offline` in a
temporary directory, HTTP calls (urllib for ordinary ones, raw sockets for the wire's edges),
/proc figures of the daemon, and one pass/fail tally.

    h = Harness(muster_bin, "test_serve_limits", config_yaml, cluster_yaml)
    st, body, headers = h.call("/filter", {...})
    h.check("name", condition, detail)
    h.finish()              # stops muster, prints "<name>: N passed, M failed", exits
"""
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Harness:
    def __init__(self, muster, name, config, cluster, extra_args=()):
        self.muster, self.name = muster, name
        self.passed = self.failed = 0
        self.dir = tempfile.mkdtemp(prefix=name + ".")
        self.config = self.write("muster.yaml", config)
        self.cluster = self.write("cluster.yaml", cluster)
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.log = []
        self.proc = subprocess.Popen(
            [muster, "serve", "--offline", "--config", self.config, "--listen",
             f"127.0.0.1:{self.port}", "-f", self.cluster, *extra_args],
            stderr=subprocess.PIPE, text=True, errors="replace")
        threading.Thread(target=lambda: self.log.extend(self.proc.stderr), daemon=True).start()
        for _ in range(200):
            try:
                if self.call("/readyz", timeout=2)[0] == 200:
                    break
            except OSError:
                pass
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        if self.proc.poll() is not None:
            time.sleep(0.2)
            print(f"{name}: muster did not start: {''.join(self.log)[-2000:]}")
            sys.exit(1)

    def sanitized(self):
        """Built with AddressSanitizer: its allocator keeps freed memory (quarantine), so
        resident-memory figures say nothing about muster's own."""
        with open(self.muster, "rb") as f:
            return b"__asan_init" in f.read()

    def write(self, fname, text):
        path = os.path.join(self.dir, fname)
        with open(path, "w") as f:
            f.write(text)
        return path

    def check(self, what, cond, detail=""):
        if cond:
            self.passed += 1
        else:
            self.failed += 1
            print(f"FAIL {what}: {str(detail)[:600]}", flush=True)
        return cond

    def call(self, path, body=None, method=None, raw=None, timeout=30):
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
        req = urllib.request.Request(self.base + path, data=data,
                                     method=method or ("POST" if data is not None else "GET"),
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                return r.status, r.read().decode(errors="replace"), dict(r.headers)
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode(errors="replace"), dict(e.headers)

    def raw(self, data, timeout=5, want=1):
        """Send bytes as they are; read until `want` answers arrived, the peer closed or the
        time ran out. Returns the bytes read."""
        s = socket.create_connection(("127.0.0.1", self.port), timeout=timeout)
        s.sendall(data)
        got = b""
        deadline = time.monotonic() + timeout
        try:
            while got.count(b"HTTP/1.1 ") < want and time.monotonic() < deadline:
                s.settimeout(max(0.05, deadline - time.monotonic()))
                chunk = s.recv(65536)
                if not chunk:
                    break
                got += chunk
            # The rest of the last answer's body, if any is in flight.
            s.settimeout(0.3)
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                got += chunk
        except (socket.timeout, ConnectionResetError):
            pass
        s.close()
        return got

    def state(self):
        st, body, _ = self.call("/debug/state")
        return st, body

    def proc_status(self, key):
        """A figure of /proc/<pid>/status in kB (VmRSS, VmHWM) or as a count (Threads)."""
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
        return -1

    def fds(self):
        return len(os.listdir(f"/proc/{self.proc.pid}/fd"))

    def stop(self):
        """SIGTERM; muster must exit 0 (under ASan that also means no leak and no error)."""
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                self.check("muster stops on SIGTERM", False, "killed after 60 s")
                return
        time.sleep(0.2)
        self.check("muster exits 0", self.proc.returncode == 0,
                   f"exit {self.proc.returncode}: {''.join(self.log[-30:])}")

    def finish(self):
        self.stop()
        print(f"{self.name}: {self.passed} passed, {self.failed} failed")
        sys.exit(1 if self.failed else 0)


def pod(name, ns="lab", cluster=None, head=False, cpu="100m", gpus=0, node=None, extra=None,
        group="w"):
    labels = {}
    if cluster:
        # As KubeRay labels them: the node type, and the group ("headgroup" for the head).
        labels = {"ray.io/cluster": cluster, "ray.io/node-type": "head" if head else "worker",
                  "ray.io/group": "headgroup" if head else group}
    req = {"cpu": cpu}
    if gpus:
        req["nvidia.com/gpu"] = str(gpus)
    p = {"metadata": {"name": name, "namespace": ns, "uid": "uid-" + name, "labels": labels},
         "spec": {"schedulerName": "muster",
                  "containers": [{"name": "c", "resources": {"requests": req}}]}}
    if node:
        p["spec"]["nodeName"] = node
    if extra:
        extra(p)
    return p
