#!/usr/bin/env bash
# gen-webhook-cert.sh - a CA and a serving certificate for muster's admission webhook.
#
#   manifests/gen-webhook-cert.sh [options]
#
#   --out DIR            where to write ca.crt ca.key tls.crt tls.key (default ./muster-webhook-certs)
#   --namespace NS       namespace of Service muster-webhook (default muster-system)
#   --dns NAME           extra DNS SAN (repeatable)
#   --ip IP              extra IP SAN (repeatable), e.g. --ip 127.0.0.1 for the loopback tests
#   --days N             validity (default 365)
#   --secret             create/replace Secret muster-webhook-tls (tls.crt, tls.key, ca.crt) in NS with kubectl
#                        (KUBECTL=... to choose the binary; its usual flags/env apply)
#   --webhook-out FILE   write manifests/webhook.yaml to FILE with the caBundle filled in
#   --url URL            with --webhook-out: call URL (https://127.0.0.1:9443/mutate-pods)
#                        instead of Service muster-webhook
#
# The serving certificate always names muster-webhook, muster-webhook.NS,
# muster-webhook.NS.svc and muster-webhook.NS.svc.cluster.local.
# Prints the base64 caBundle on stdout (everything else goes to stderr).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
out=./muster-webhook-certs ns=muster-system days=365 secret=0 webhook_out="" url=""
dns=() ips=()
usage() { sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
while (($#)); do
  case $1 in
    --out) out=${2:?}; shift 2 ;;
    --namespace) ns=${2:?}; shift 2 ;;
    --dns) dns+=("${2:?}"); shift 2 ;;
    --ip) ips+=("${2:?}"); shift 2 ;;
    --days) days=${2:?}; shift 2 ;;
    --secret) secret=1; shift ;;
    --webhook-out) webhook_out=${2:?}; shift 2 ;;
    --url) url=${2:?}; shift 2 ;;
    -h|--help) usage ;;
    *) echo "gen-webhook-cert.sh: unknown option $1" >&2; usage ;;
  esac
done
[[ -z $url || -n $webhook_out ]] || { echo "gen-webhook-cert.sh: --url needs --webhook-out" >&2; exit 2; }
command -v openssl >/dev/null || { echo "gen-webhook-cert.sh: openssl is required" >&2; exit 1; }

svc=muster-webhook
san="DNS:$svc,DNS:$svc.$ns,DNS:$svc.$ns.svc,DNS:$svc.$ns.svc.cluster.local"
for d in "${dns[@]}"; do san+=",DNS:$d"; done
for i in "${ips[@]}"; do san+=",IP:$i"; done

mkdir -p "$out"
umask 077
openssl req -x509 -newkey rsa:2048 -nodes -sha256 -days "$days" \
  -keyout "$out/ca.key" -out "$out/ca.crt" -subj "/CN=muster-webhook-ca" \
  -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null
openssl req -newkey rsa:2048 -nodes -sha256 -keyout "$out/tls.key" -out "$out/tls.csr" \
  -subj "/CN=$svc.$ns.svc" 2>/dev/null
printf '%s\n' "subjectAltName=$san" "basicConstraints=critical,CA:FALSE" \
  "keyUsage=critical,digitalSignature,keyEncipherment" "extendedKeyUsage=serverAuth" > "$out/tls.ext"
openssl x509 -req -sha256 -days "$days" -in "$out/tls.csr" -CA "$out/ca.crt" -CAkey "$out/ca.key" \
  -CAcreateserial -out "$out/tls.crt" -extfile "$out/tls.ext" 2>/dev/null
rm -f "$out/tls.csr" "$out/tls.ext" "$out/ca.srl"
chmod 0644 "$out/ca.crt" "$out/tls.crt"
echo "gen-webhook-cert.sh: wrote $out/{ca,tls}.{crt,key} (SANs $san)" >&2

ca_bundle=$(base64 < "$out/ca.crt" | tr -d '\n')

if ((secret)); then
  kc=${KUBECTL:-kubectl}
  # A kubernetes.io/tls Secret with ca.crt too: the ServiceMonitor verifies muster with it.
  "$kc" -n "$ns" create secret generic muster-webhook-tls --type=kubernetes.io/tls \
    --from-file=tls.crt="$out/tls.crt" --from-file=tls.key="$out/tls.key" --from-file=ca.crt="$out/ca.crt" \
    --dry-run=client -o yaml | "$kc" apply -f - >&2
fi

if [[ -n $webhook_out ]]; then
  src=$here/webhook.yaml
  if [[ -n $url ]]; then
    # Replace the service reference by the URL.
    awk -v url="$url" '
      /^    service:$/ { print "    url: \"" url "\""; skip = 1; next }
      skip && /^      / { next }
      { skip = 0; print }' "$src"
  else
    cat "$src"
  fi | sed "s#^\(    caBundle: \)__CA_BUNDLE__\$#\1$ca_bundle#" > "$webhook_out"
  echo "gen-webhook-cert.sh: wrote $webhook_out" >&2
fi

echo "$ca_bundle"
