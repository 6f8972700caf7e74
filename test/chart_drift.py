#!/usr/bin/env python3
"""chart_drift.py - do the Helm chart and the kustomize manifests deploy the same objects?

    chart_drift.py KUSTOMIZE.yaml HELM.yaml     print the differences, exit 1 if any

KUSTOMIZE.yaml is `kubectl kustomize manifests/` (or the files kustomization.yaml lists, see
kustomize_docs) followed by manifests/webhook.yaml; HELM.yaml is `helm template --include-crds`
of the chart with its default values. Objects are matched by kind, namespace and name and
compared whole, after removing only what Helm adds by design:

  - the labels helm.sh/chart, app.kubernetes.io/{managed-by,instance,version};
  - the pod template's checksum/* annotations (they roll the pods when settings change);
  - the webhook's caBundle (a placeholder in manifests/webhook.yaml, a generated CA here);
  - the Secret muster-webhook-tls, which the chart makes and manifests/gen-webhook-cert.sh
    makes for the kustomize path (test_chart.sh checks the chart's one on its own);
  - the Namespace, which the chart makes only with namespace.create (test_chart.sh compares
    that one too).

ConfigMap data that is YAML (muster.yaml, scheduler-config.yaml) is compared parsed: key
order and comments do not matter, every value does.
"""
import os
import sys

import yaml

HELM_LABELS = {"helm.sh/chart", "app.kubernetes.io/managed-by", "app.kubernetes.io/instance",
               "app.kubernetes.io/version"}
# Objects only one side makes by default, with why.
HELM_ONLY = {("Secret", "muster-system", "muster-webhook-tls"):
             "the webhook certificate (gen-webhook-cert.sh --secret on the kustomize path)"}
MANIFESTS_ONLY = {("Namespace", "", "muster-system"):
                  "helm install needs the namespace first; values namespace.create renders it"}


def load_all(text):
    return [d for d in yaml.safe_load_all(text) if d]


def kustomize_docs(manifests):
    """The objects `kubectl kustomize manifests/` prints, for a kustomization that only lists
    resources (anything else in it and this refuses, so it can never silently differ)."""
    k = yaml.safe_load(open(os.path.join(manifests, "kustomization.yaml")))
    extra = set(k) - {"apiVersion", "kind", "resources"}
    if extra:
        raise SystemExit(f"kustomization.yaml has {sorted(extra)}: compare with kubectl kustomize")
    docs = []
    for f in k["resources"]:
        docs += load_all(open(os.path.join(manifests, f)).read())
    return docs


def key(o):
    m = o.get("metadata", {})
    return (o.get("kind"), m.get("namespace", ""), m.get("name"))


def strip_labels(meta):
    if not isinstance(meta, dict):
        return
    labels = meta.get("labels")
    if isinstance(labels, dict):
        for k in HELM_LABELS:
            labels.pop(k, None)
        if not labels:
            meta.pop("labels")


def normalize(o):
    strip_labels(o.get("metadata"))
    tmpl = o.get("spec", {}).get("template") if isinstance(o.get("spec"), dict) else None
    if isinstance(tmpl, dict):
        meta = tmpl.get("metadata", {})
        strip_labels(meta)
        ann = meta.get("annotations", {})
        for k in [k for k in ann if k.startswith("checksum/")]:
            ann.pop(k)
        if "annotations" in meta and not ann:
            meta.pop("annotations")
    if o.get("kind") == "MutatingWebhookConfiguration":
        for w in o.get("webhooks", []):
            if "caBundle" in w.get("clientConfig", {}):
                w["clientConfig"]["caBundle"] = "<caBundle>"
    if o.get("kind") == "ConfigMap":
        for k, v in list(o.get("data", {}).items()):
            if k.endswith((".yaml", ".yml")):
                o["data"][k] = yaml.safe_load(v)
    return o


def diff(a, b, path=""):
    """Paths where a and b differ."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for k in sorted(set(a) | set(b), key=str):
            if k not in a:
                out.append(f"{path}.{k}: only in the chart ({b[k]!r:.80})")
            elif k not in b:
                out.append(f"{path}.{k}: only in the manifests ({a[k]!r:.80})")
            else:
                out += diff(a[k], b[k], f"{path}.{k}")
        return out
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return [f"{path}: {len(a)} items in the manifests, {len(b)} in the chart"]
        out = []
        for i, (x, y) in enumerate(zip(a, b)):
            out += diff(x, y, f"{path}[{i}]")
        return out
    return [] if a == b else [f"{path}: manifests {a!r:.80}, chart {b!r:.80}"]


def compare(kdocs, hdocs):
    """Differences between the two object lists, one line each; [] when they agree."""
    ks = {key(o): normalize(o) for o in kdocs}
    hs = {key(o): normalize(o) for o in hdocs}
    out = []
    for k in sorted(set(ks) | set(hs), key=str):
        name = "/".join(x for x in k if x)
        if k not in hs:
            if k not in MANIFESTS_ONLY:
                out.append(f"{name}: in the manifests, not in the chart")
        elif k not in ks:
            if k not in HELM_ONLY:
                out.append(f"{name}: in the chart, not in the manifests")
        else:
            out += [f"{name}{d}" for d in diff(ks[k], hs[k])]
    return out


def main():
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    diffs = compare(load_all(open(sys.argv[1]).read()), load_all(open(sys.argv[2]).read()))
    for d in diffs:
        print(d)
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main())
