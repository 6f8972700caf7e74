#!/usr/bin/env bash
# The Helm chart (manifests/chart/muster) without a cluster:
#  - manifests/render.sh --check: config.yaml and the chart's copies of manifests/ are current;
#  - helm lint --strict;
#  - no drift: `helm template` with the default values deploys the objects `kubectl apply -k
#    manifests/` deploys plus the webhook (test/chart_drift.py), and a changed value is seen
#    as a difference (so the comparison can fail);
#  - a values matrix: each case renders the chart and asserts what those values must change,
#    and every rendered muster.yaml passes `muster serve --check-config`;
#  - values the schema or the templates refuse fail with a message naming them.
# helm is the one test/e2e/build-components.sh builds (pinned, cached); built here if missing.
#   test_chart.sh MUSTER_BIN TEST_DIR
set -uo pipefail
MUSTER=$1
TDIR=$(cd "$2" && pwd)
ROOT=$(cd "$TDIR/.." && pwd)
HELM_VERSION=${HELM_VERSION:-$(sed -n 's/^HELM_VERSION=\${HELM_VERSION:-\(v[^}]*\)}$/\1/p' "$TDIR/e2e/build-components.sh")}
HELM=${MUSTER_CACHE:-$HOME/.cache/muster}/bin/helm-$HELM_VERSION
if [[ ! -x $HELM ]]; then
  echo "test_chart: building helm $HELM_VERSION (once; cached)" >&2
  bash "$TDIR/e2e/build-components.sh" helm >&2 || { echo "test_chart: 0 passed, 1 failed"; exit 1; }
fi
"$HELM" version --short
exec python3 - "$MUSTER" "$ROOT" "$HELM" <<'PY'
import base64, json, os, subprocess, sys, tempfile
import yaml

muster, root, helm = sys.argv[1:4]
sys.path.insert(0, os.path.join(root, "test"))
import chart_drift

chart = os.path.join(root, "manifests/chart/muster")
man = os.path.join(root, "manifests")
tmp = tempfile.mkdtemp(prefix="test_chart.")
passed = failed = 0


def check(name, cond, detail=""):
    global passed, failed
    if cond:
        passed += 1
    else:
        failed += 1
        print(f"FAIL {name}: {str(detail)[:2000]}")


def run(*args):
    return subprocess.run(list(args), capture_output=True, text=True)


def template(*args, ns="muster-system", values=None):
    """helm template with these flags; (returncode, objects, text, stderr)."""
    cmd = [helm, "template", "muster", chart, "-n", ns, "--include-crds", *args]
    if values is not None:
        vf = os.path.join(tmp, "values.yaml")
        open(vf, "w").write(yaml.safe_dump(values))
        cmd += ["-f", vf]
    r = run(*cmd)
    docs = chart_drift.load_all(r.stdout) if r.returncode == 0 else []
    return r.returncode, docs, r.stdout, r.stderr


def find(docs, kind, name=None):
    return [d for d in docs if d["kind"] == kind and (name is None or d["metadata"]["name"] == name)]


def one(docs, kind, name):
    got = find(docs, kind, name)
    return got[0] if len(got) == 1 else {}


def settings(docs):
    cm = one(docs, "ConfigMap", "muster-config")
    data = cm.get("data", {})
    return yaml.safe_load(data.get("muster.yaml", "{}")), yaml.safe_load(data.get("scheduler-config.yaml", "{}"))


def pod(docs):
    return one(docs, "Deployment", "muster").get("spec", {}).get("template", {}).get("spec", {})


def container(docs, name):
    return next((c for c in pod(docs).get("containers", []) if c["name"] == name), {})


def settings_valid(docs, case):
    """The rendered muster.yaml is accepted by muster itself."""
    cm = one(docs, "ConfigMap", "muster-config")
    f = os.path.join(tmp, "muster.yaml")
    open(f, "w").write(cm.get("data", {}).get("muster.yaml", ""))
    r = run(muster, "serve", "--check-config", "--config", f)
    check(f"{case}: muster accepts the rendered muster.yaml", r.returncode == 0, r.stderr)


def manifests_docs():
    return chart_drift.kustomize_docs(man) + chart_drift.load_all(open(f"{man}/webhook.yaml").read())


# ---- 1. sources current, lint -----------------------------------------------------------
r = run(f"{man}/render.sh", "--check")
check("render.sh --check", r.returncode == 0, r.stderr)
r = run(helm, "lint", "--strict", chart)
check("helm lint --strict", r.returncode == 0, r.stdout + r.stderr)
r = run(helm, "lint", "--strict", chart, "-n", "lab", "--set", "replicas=1,gpuSharing.enabled=false,"
        "kuberay.batchScheduler=none,strategy=spread")
check("helm lint --strict (other values)", r.returncode == 0, r.stdout + r.stderr)

# ---- 2. no drift -------------------------------------------------------------------------
rc, D, text, err = template()
check("defaults render", rc == 0 and D, err)
diffs = chart_drift.compare(manifests_docs(), [json.loads(json.dumps(d)) for d in D])
check("defaults: the chart deploys what kubectl apply -k deploys", diffs == [], "\n".join(diffs))
kinds = sorted({d["kind"] for d in D})
check("defaults: no Namespace, no monitoring objects without their CRDs",
      not find(D, "Namespace") and not find(D, "ServiceMonitor") and not find(D, "PrometheusRule"), kinds)
# The comparison sees a change inside the settings, a label, an extra object.
rc, D2, _, err = template("--set", "strategy=spread,podLabels.team=ml,queues[0].name=q")
diffs = chart_drift.compare(manifests_docs(), D2)
check("drift check sees a changed setting", any("muster-config.data.muster.yaml.strategy" in d for d in diffs), diffs)
check("drift check sees a changed pod label", any("template.metadata.labels.team" in d for d in diffs), diffs)
check("drift check sees an object the manifests lack", any(d.startswith("Queue/q") for d in diffs), diffs)
rc, DN, _, err = template("--set", "namespace.create=true")
ns_k = [d for d in manifests_docs() if d["kind"] == "Namespace"]
ns_h = find(DN, "Namespace")
check("namespace.create: the Namespace of manifests/namespace.yaml",
      len(ns_h) == 1 and chart_drift.compare(ns_k, ns_h) == [], (ns_h, chart_drift.compare(ns_k, ns_h)))

# The chart's certificate: the webhook trusts the CA that signed the Secret's certificate,
# which names the Service, and the pods roll when it changes.
sec = one(D, "Secret", "muster-webhook-tls")
mwc = one(D, "MutatingWebhookConfiguration", "muster-gpu-sharing")
for k in ("tls.crt", "tls.key", "ca.crt"):
    open(os.path.join(tmp, k), "wb").write(base64.b64decode(sec.get("data", {}).get(k, "")))
check("Secret is kubernetes.io/tls", sec.get("type") == "kubernetes.io/tls", sec.get("type"))
check("caBundle is the Secret's ca.crt",
      mwc and mwc["webhooks"][0]["clientConfig"].get("caBundle") == sec["data"]["ca.crt"], "")
r = run("openssl", "verify", "-CAfile", os.path.join(tmp, "ca.crt"), os.path.join(tmp, "tls.crt"))
check("the serving certificate verifies against the CA", r.returncode == 0, r.stdout + r.stderr)
r = run("openssl", "x509", "-in", os.path.join(tmp, "tls.crt"), "-noout", "-ext", "subjectAltName")
sans = {"muster-webhook", "muster-webhook.muster-system", "muster-webhook.muster-system.svc",
        "muster-webhook.muster-system.svc.cluster.local"}
check("the certificate names the Service", all(f"DNS:{n}" in r.stdout for n in sans), r.stdout)
r1 = run("openssl", "x509", "-in", os.path.join(tmp, "tls.crt"), "-noout", "-pubkey")
r2 = run("openssl", "pkey", "-in", os.path.join(tmp, "tls.key"), "-pubout")
check("tls.key is the certificate's key", r1.returncode == 0 and r1.stdout == r2.stdout, r2.stderr)
import hashlib
ann = one(D, "Deployment", "muster")["spec"]["template"]["metadata"].get("annotations", {})
check("pods carry the certificate's checksum",
      ann.get("checksum/webhook-tls") == hashlib.sha256(sec["data"]["tls.crt"].encode()).hexdigest(), ann)
settings_valid(D, "defaults")

# ---- 3. the values matrix ------------------------------------------------------------------
# Another namespace: everything follows it, nothing names muster-system.
rc, L, text, err = template("--api-versions", "monitoring.coreos.com/v1/ServiceMonitor",
                            "--api-versions", "monitoring.coreos.com/v1/PrometheusRule",
                            "--set", "namespace.create=true", ns="lab")
check("ns lab renders", rc == 0, err)
check("ns lab: no object names muster-system", "muster-system" not in text,
      [l for l in text.splitlines() if "muster-system" in l][:5])
namespaced = [d for d in L if d["kind"] not in ("Namespace", "CustomResourceDefinition", "ClusterRole",
              "ClusterRoleBinding", "PriorityClass", "MutatingWebhookConfiguration")]
check("ns lab: namespaced objects in lab or kube-system",
      all(d["metadata"].get("namespace") in ("lab", "kube-system") for d in namespaced),
      [(d["kind"], d["metadata"].get("namespace")) for d in namespaced])
ms, sc = settings(L)
check("ns lab: reservation pods and Lease in lab",
      ms["gpuSharing"]["reservationNamespace"] == "lab" and ms["leaderElection"].get("leaseNamespace") == "lab"
      and sc["leaderElection"]["resourceNamespace"] == "lab", (ms, sc["leaderElection"]))
crb = one(L, "ClusterRoleBinding", "muster")
check("ns lab: ClusterRoleBinding subject in lab", crb.get("subjects", [{}])[0].get("namespace") == "lab", crb)
w = one(L, "MutatingWebhookConfiguration", "muster-gpu-sharing").get("webhooks", [{}])[0]
check("ns lab: webhook calls Service lab/muster-webhook and skips namespace lab",
      w.get("clientConfig", {}).get("service", {}).get("namespace") == "lab" and
      "lab" in w.get("namespaceSelector", {}).get("matchExpressions", [{}])[0].get("values", []), w)
check("ns lab: the Namespace is lab with Pod Security labels",
      one(L, "Namespace", "lab").get("metadata", {}).get("labels", {}).get("pod-security.kubernetes.io/enforce") == "baseline", "")
sm = one(L, "ServiceMonitor", "muster")
check("ns lab: ServiceMonitor verifies muster-webhook.lab.svc",
      sm.get("spec", {}).get("endpoints", [{}])[0].get("tlsConfig", {}).get("serverName") == "muster-webhook.lab.svc", sm)
settings_valid(L, "ns lab")

# Monitoring: rendered only when the cluster serves the CRDs, from manifests/prometheus/.
rules_src = yaml.safe_load(open(f"{man}/prometheus/muster-rules.yaml"))
rc, M, _, err = template("--api-versions", "monitoring.coreos.com/v1/ServiceMonitor",
                         "--api-versions", "monitoring.coreos.com/v1/PrometheusRule",
                         "--set", "serviceMonitor.labels.release=prom,serviceMonitor.interval=10s,"
                         "prometheusRule.labels.release=prom,grafanaDashboard.enabled=true")
pr, sm = one(M, "PrometheusRule", "muster"), one(M, "ServiceMonitor", "muster")
check("monitoring: PrometheusRule is manifests/prometheus/muster-rules.yaml",
      pr.get("spec") == rules_src["spec"] and pr["metadata"]["labels"].get("release") == "prom", pr.get("metadata"))
check("monitoring: ServiceMonitor with its labels and interval",
      sm.get("metadata", {}).get("labels", {}).get("release") == "prom" and
      sm["spec"]["endpoints"][0]["interval"] == "10s" and sm["spec"]["endpoints"][0]["port"] == "https", sm)
svc_ports = one(M, "Service", "muster-webhook").get("spec", {}).get("ports", [])
check("monitoring: the Service has the port the ServiceMonitor scrapes", any(p["name"] == "https" for p in svc_ports), svc_ports)
gd = one(M, "ConfigMap", "muster-grafana-dashboard")
check("monitoring: Grafana dashboard ConfigMap holds manifests/grafana/muster.json",
      json.loads(gd.get("data", {}).get("muster.json", "null")) == json.load(open(f"{man}/grafana/muster.json")) and
      gd["metadata"]["labels"].get("grafana_dashboard") == "1", gd.get("metadata"))
rc, M2, _, _ = template("--api-versions", "monitoring.coreos.com/v1/ServiceMonitor",
                        "--set", "serviceMonitor.enabled=false")
check("monitoring: serviceMonitor.enabled=false renders none", rc == 0 and not find(M2, "ServiceMonitor"), "")

# One replica: no PodDisruptionBudget (drains would block).
rc, R1, _, err = template("--set", "replicas=1")
check("replicas=1", one(R1, "Deployment", "muster").get("spec", {}).get("replicas") == 1 and not find(R1, "PodDisruptionBudget"), err)
rc, R3, _, _ = template("--set", "replicas=3")
check("replicas=3 keeps the PDB", one(R3, "PodDisruptionBudget", "muster").get("spec", {}).get("minAvailable") == 1, "")

# Profiles follow the KubeRay contract and the names given; muster serves the same names.
for contract, names in [("kai-scheduler", ["muster", "kai-scheduler", "gpu-batch"]),
                        ("scheduler-plugins", ["muster", "scheduler-plugins-scheduler", "gpu-batch"]),
                        ("volcano", ["muster", "volcano", "gpu-batch"]),
                        ("none", ["muster", "gpu-batch"])]:
    rc, P, _, err = template("--set", f"kuberay.batchScheduler={contract},extraSchedulerNames[0]=gpu-batch")
    ms, sc = settings(P)
    check(f"contract {contract}: profiles", [p["schedulerName"] for p in sc.get("profiles", [])] == names, sc.get("profiles"))
    check(f"contract {contract}: muster's schedulerNames", ms.get("schedulerNames") == names, ms.get("schedulerNames"))
    settings_valid(P, f"contract {contract}")
rc, P, _, _ = template("--set", "schedulerName=ray-gangs,kuberay.batchScheduler=none")
check("schedulerName", settings(P)[0].get("schedulerNames") == ["ray-gangs"], settings(P)[0])

# Scheduling settings and anything else of muster.yaml.
rc, S, _, err = template(values={"strategy": "spread", "queueLabelKeys": ["team.example/queue"], "defaultQueue": "batch",
                                 "musterSettings": {"planTTL": "90s", "log": {"level": "debug"}},
                                 "schedulerSettings": {"percentageOfNodesToScore": 50}})
ms, sc = settings(S)
check("settings: strategy, queue labels, default queue",
      ms.get("strategy") == "spread" and ms.get("queueLabelKeys") == ["team.example/queue"] and
      ms.get("defaultQueue") == "batch", ms)
check("settings: musterSettings merged, the rest kept",
      ms.get("planTTL") == "90s" and ms["log"] == {"format": "json", "level": "debug"} and ms.get("bindWait") == "20s", ms)
check("settings: schedulerSettings merged",
      sc.get("percentageOfNodesToScore") == 50 and sc["extenders"][0]["urlPrefix"] == "http://127.0.0.1:8888", sc)
settings_valid(S, "settings")
rc, F, _, err = template("--set", "strategy=fragmentation")
check("settings: strategy fragmentation", rc == 0 and settings(F)[0].get("strategy") == "fragmentation", err)
settings_valid(F, "settings (fragmentation)")
rc, S2, _, _ = template(values={"musterSettings": {"listen": "0.0.0.0:9888"}})
check("settings: the extender URL follows listen", settings(S2)[1]["extenders"][0]["urlPrefix"] == "http://127.0.0.1:9888", settings(S2)[1])
a1 = one(S, "Deployment", "muster")["spec"]["template"]["metadata"]["annotations"]["checksum/config"]
a0 = one(D, "Deployment", "muster")["spec"]["template"]["metadata"]["annotations"]["checksum/config"]
check("settings: a settings change rolls the pods (checksum/config)", a0 != a1, a0)

# GPU sharing off: no webhook configuration, no reservation pods; the HTTPS port stays.
rc, G, _, err = template("--set", "gpuSharing.enabled=false")
ms, _ = settings(G)
check("gpuSharing off: no MutatingWebhookConfiguration", rc == 0 and not find(G, "MutatingWebhookConfiguration"), err)
check("gpuSharing off: reservations false, HTTPS listener kept",
      ms["gpuSharing"].get("reservations") is False and ms["gpuSharing"].get("webhookListen") == "0.0.0.0:9443", ms)
settings_valid(G, "gpuSharing off")
rc, G1, _, _ = template()
check("gpuSharing on: reservations not turned off", "reservations" not in settings(G1)[0]["gpuSharing"], settings(G1)[0])

# Images.
rc, I, _, err = template("--set", "image.repository=registry.example.com/muster,image.tag=0.2.0,image.pullPolicy=Always,"
                         "schedulerImage.tag=v1.35.1")
check("image: muster container and reservation pods",
      container(I, "muster").get("image") == "registry.example.com/muster:0.2.0" and
      settings(I)[0]["gpuSharing"]["reservationImage"] == "registry.example.com/muster:0.2.0" and
      container(I, "muster").get("imagePullPolicy") == "Always", container(I, "muster").get("image"))
check("image: kube-scheduler", container(I, "kube-scheduler").get("image") == "registry.k8s.io/kube-scheduler:v1.35.1", "")

# The pod's placement and resources.
vals = {"resources": {"muster": {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"memory": "2Gi"}},
                      "scheduler": {"requests": {"cpu": "200m", "memory": "256Mi"}, "limits": {"memory": "768Mi"}}},
        "nodeSelector": {"node-role.kubernetes.io/control-plane": ""},
        "tolerations": [{"key": "node-role.kubernetes.io/control-plane", "operator": "Exists", "effect": "NoSchedule"}],
        "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "pool", "operator": "In", "values": ["system"]}]}]}}},
        "priorityClassName": "system-cluster-critical", "imagePullSecrets": [{"name": "regcred"}],
        "podAnnotations": {"example.com/team": "platform"}}
rc, PS, _, err = template(values=vals)
ps = pod(PS)
check("pod: resources", container(PS, "muster").get("resources") == vals["resources"]["muster"] and
      container(PS, "kube-scheduler").get("resources") == vals["resources"]["scheduler"], err)
check("pod: nodeSelector, tolerations, affinity",
      ps.get("nodeSelector") == vals["nodeSelector"] and ps.get("tolerations") == vals["tolerations"] and
      ps.get("affinity") == vals["affinity"], ps.get("affinity"))
check("pod: priorityClassName, imagePullSecrets, annotations",
      ps.get("priorityClassName") == "system-cluster-critical" and ps.get("imagePullSecrets") == [{"name": "regcred"}] and
      one(PS, "Deployment", "muster")["spec"]["template"]["metadata"]["annotations"].get("example.com/team") == "platform", ps)
check("pod: default anti-affinity one per node",
      pod(D).get("affinity", {}).get("podAntiAffinity", {}).get("requiredDuringSchedulingIgnoredDuringExecution",
      [{}])[0].get("topologyKey") == "kubernetes.io/hostname", pod(D).get("affinity"))

# Queues from values.
queues = [{"name": "org", "priority": 100, "resources": {"gpu": {"quota": 8, "limit": 8}}},
          {"name": "team-a", "parentQueue": "org", "resources": {"gpu": {"quota": 2, "limit": "2500m", "overQuotaWeight": 1},
                                                                  "memory": {"quota": "64Gi", "limit": -1}}}]
rc, Q, _, err = template(values={"queues": queues})
got = {q["metadata"]["name"]: q for q in find(Q, "Queue")}
check("queues: one Queue each, cluster-scoped",
      set(got) == {"org", "team-a"} and all("namespace" not in q["metadata"] for q in got.values()), err or list(got))
check("queues: spec is the entry less its name",
      all(got.get(q["name"], {}).get("spec") == {k: v for k, v in q.items() if k != "name"} for q in queues),
      {k: v.get("spec") for k, v in got.items()})
check("queues: muster.dev/v1alpha1", all(q["apiVersion"] == "muster.dev/v1alpha1" for q in got.values()), "")
rc, Q0, _, _ = template()
check("queues: none by default", not find(Q0, "Queue"), "")
# The Queue objects are what muster's own reader accepts (simulate reads Queue manifests).
qf = os.path.join(tmp, "queues.yaml")
open(qf, "w").write(yaml.safe_dump_all(find(Q, "Queue")))
r = run(muster, "simulate", "-f", qf, "-o", "json")
check("queues: muster reads the rendered Queues", r.returncode == 0 and
      {q["name"] for q in json.loads(r.stdout or "{}").get("queues", [])} >= {"org", "team-a"}, r.stderr or r.stdout[:300])

# cert-manager instead of the chart's certificate.
rc, _, _, err = template("--set", "webhook.certificate.source=cert-manager")
check("cert-manager without its API: refused with a message", rc != 0 and "cert-manager.io/v1" in err, err)
rc, C, _, err = template("--api-versions", "cert-manager.io/v1", "--set", "webhook.certificate.source=cert-manager")
cert = one(C, "Certificate", "muster-webhook")
w = one(C, "MutatingWebhookConfiguration", "muster-gpu-sharing")
check("cert-manager: a Certificate into muster-webhook-tls naming the Service",
      cert.get("spec", {}).get("secretName") == "muster-webhook-tls" and set(cert["spec"]["dnsNames"]) == sans, err or cert)
check("cert-manager: the chart's self-signed CA issues it",
      cert["spec"]["issuerRef"] == {"kind": "Issuer", "name": "muster-webhook-ca"} and
      one(C, "Certificate", "muster-webhook-ca").get("spec", {}).get("isCA") is True and
      one(C, "Issuer", "muster-selfsigned") and one(C, "Issuer", "muster-webhook-ca").get("spec", {}).get("ca"), "")
check("cert-manager: no chart-made Secret, caBundle left to the injector",
      not find(C, "Secret") and "caBundle" not in w.get("webhooks", [{}])[0].get("clientConfig", {}) and
      w.get("metadata", {}).get("annotations", {}).get("cert-manager.io/inject-ca-from") == "muster-system/muster-webhook", w.get("metadata"))
check("cert-manager: no certificate checksum on the pods",
      "checksum/webhook-tls" not in one(C, "Deployment", "muster")["spec"]["template"]["metadata"]["annotations"], "")
rc, C2, _, err = template("--api-versions", "cert-manager.io/v1", "--set",
                          "webhook.certificate.source=cert-manager,webhook.certificate.certManager.issuerRef.kind=ClusterIssuer,"
                          "webhook.certificate.certManager.issuerRef.name=corp-ca")
check("cert-manager: a given issuer, no chart CA",
      one(C2, "Certificate", "muster-webhook").get("spec", {}).get("issuerRef") == {"kind": "ClusterIssuer", "name": "corp-ca"} and
      not find(C2, "Issuer") and not one(C2, "Certificate", "muster-webhook-ca"), err)

# ---- 4. values refused ----------------------------------------------------------------------
for setting, says in [("strategy=spred", "strategy"), ("kuberay.batchScheduler=yunikorn", "batchScheduler"),
                      ("replicas=0", "replicas"), ("webhook.certificate.source=vault", "source"),
                      ("queues[0].priority=1", "name"), ("schedulerName=", "schedulerName")]:
    rc, _, _, err = template("--set", setting)
    check(f"refused: {setting}", rc != 0 and says in err, err or "rendered")

subprocess.run(["rm", "-rf", tmp])
print(f"test_chart: {passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
PY
