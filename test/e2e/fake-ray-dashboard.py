#!/usr/bin/env python3
"""A stand-in for the Ray dashboard of every Ray head, for the KubeRay operator's RayService
reconciler: no Ray runs on kwok's fake nodes, so nothing answers at the dashboard address the
operator computes (<head service>.<ns>.svc.cluster.local:8265). The operator is started with
HTTP_PROXY pointing here (its dashboard client uses Go's default transport, which honours it);
every request comes here as a proxy request, whatever the host.

It answers what rayservice_controller.go asks (ray-operator v1.7.0,
utils/dashboardclient/dashboard_httpclient.go):
  GET  /api/serve/applications/?api_type=declarative  every application RUNNING (so a cluster is
                                                      ready to serve as soon as its head is)
  PUT  /api/serve/applications/                       the config is taken
  GET  /-/healthz (the Serve proxy's health)          success
Anything else (the RayJob controller's /api/jobs/...): 404, as a dashboard without the job.

Usage: fake-ray-dashboard.py PORT   (listens on 127.0.0.1:PORT, logs each request on stdout)
"""
import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

SERVE = {
    "deploy_mode": "MULTI_APP",
    "applications": {
        "app": {
            "name": "app",
            "status": "RUNNING",
            "message": "",
            "route_prefix": "/",
            "deployments": {"Model": {"name": "Model", "status": "HEALTHY", "message": ""}},
        }
    },
}


class Dashboard(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def _answer(self, code, body, ctype="application/json"):
        data = body.encode()
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _path(self):
        return urlsplit(self.path).path  # a proxy request carries the whole URL

    def do_GET(self):
        path = self._path()
        if path.startswith("/api/serve/applications"):
            self._answer(200, json.dumps(SERVE))
        elif path == "/-/healthz":
            self._answer(200, "success", "text/plain")
        else:
            self._answer(404, json.dumps({"error": "not found"}))

    def do_PUT(self):
        length = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(length)
        if self._path().startswith("/api/serve/applications"):
            self._answer(200, "{}")
        else:
            self._answer(404, json.dumps({"error": "not found"}))

    def do_POST(self):
        self.do_PUT()

    def log_message(self, fmt, *args):
        sys.stdout.write("%s %s\n" % (self.command, self.path))
        sys.stdout.flush()


if __name__ == "__main__":
    ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Dashboard).serve_forever()
