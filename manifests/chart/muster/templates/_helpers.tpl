{{/*
How the chart is built. Most objects come from manifests/ itself: manifests/render.sh copies
the files `kubectl apply -k manifests/` deploys into files/ (and the CRD into crds/), and the
templates read those copies, turning every "muster-system" into the release namespace and
putting the values over them. So the kustomize manifests and the chart cannot drift apart;
test/test_chart.sh renders both and compares the objects.
*/}}

{{/* Labels Helm adds to every object, beside the object's own. */}}
{{- define "muster.helmLabels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
{{- end }}

{{/* The labels of manifests/ objects, plus Helm's. */}}
{{- define "muster.labels" -}}
app.kubernetes.io/name: muster
app.kubernetes.io/part-of: muster
{{ include "muster.helmLabels" . }}
{{- end }}

{{- define "muster.image" -}}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) -}}
{{- end }}

{{/*
muster.sourceDocs (list ROOT FILE): the objects of files/FILE as a YAML list, with
muster-system replaced by the release namespace.
*/}}
{{- define "muster.sourceDocs" -}}
{{- $root := index . 0 -}}
{{- $file := index . 1 -}}
{{- $text := $root.Files.Get (printf "files/%s" $file) -}}
{{- if not $text -}}
{{- fail (printf "files/%s is missing: run manifests/render.sh" $file) -}}
{{- end -}}
{{- $objs := list -}}
{{- range $doc := splitList "\n---" ($text | replace "muster-system" $root.Release.Namespace) -}}
{{- $obj := fromYaml $doc -}}
{{- if hasKey $obj "Error" -}}
{{- fail (printf "files/%s: %s" $file $obj.Error) -}}
{{- end -}}
{{- if $obj -}}
{{- $objs = append $objs $obj -}}
{{- end -}}
{{- end -}}
{{- toYaml $objs -}}
{{- end }}

{{/* muster.render (list ROOT OBJECT EXTRA-LABELS): one object with Helm's and extra labels. */}}
{{- define "muster.render" -}}
{{- $root := index . 0 -}}
{{- $obj := index . 1 -}}
{{- $meta := $obj.metadata | default dict -}}
{{- $labels := merge (dict) (index . 2 | default dict) (include "muster.helmLabels" $root | fromYaml) ($meta.labels | default dict) -}}
{{- $_ := set $meta "labels" $labels -}}
{{- $_ := set $obj "metadata" $meta -}}
---
{{ toYaml $obj }}
{{- end }}

{{/* muster.source (list ROOT FILE): every object of files/FILE, rendered. */}}
{{- define "muster.source" -}}
{{- $root := index . 0 -}}
{{- range include "muster.sourceDocs" . | fromYamlArray }}
{{ include "muster.render" (list $root . dict) }}
{{- end }}
{{- end }}

{{/*
The kube-scheduler profiles and muster's schedulerNames: schedulerName, the KubeRay
contract's name, then extraSchedulerNames.
*/}}
{{- define "muster.schedulerNames" -}}
{{- $contracts := dict "kai-scheduler" "kai-scheduler" "scheduler-plugins" "scheduler-plugins-scheduler" "volcano" "volcano" "none" "" -}}
{{- $contract := .Values.kuberay.batchScheduler | default "none" -}}
{{- if not (hasKey $contracts $contract) -}}
{{- fail (printf "kuberay.batchScheduler %q is not one of kai-scheduler, scheduler-plugins, volcano, none" $contract) -}}
{{- end -}}
{{- $names := list (required "schedulerName must be set" .Values.schedulerName) -}}
{{- with get $contracts $contract -}}
{{- $names = append $names . -}}
{{- end -}}
{{- range .Values.extraSchedulerNames -}}
{{- $names = append $names . -}}
{{- end -}}
{{- toYaml (uniq $names) -}}
{{- end }}

{{/* muster's settings: manifests/muster.yaml with the values put over it. */}}
{{- define "muster.settings" -}}
{{- $v := .Values -}}
{{- $ns := .Release.Namespace -}}
{{- $s := index (include "muster.sourceDocs" (list . "muster.yaml") | fromYamlArray) 0 -}}
{{- $_ := set $s "schedulerNames" (include "muster.schedulerNames" . | fromYamlArray) -}}
{{- $_ := set $s "strategy" $v.strategy -}}
{{- if $v.queueLabelKeys -}}
{{- $_ := set $s "queueLabelKeys" $v.queueLabelKeys -}}
{{- end -}}
{{- if $v.defaultQueue -}}
{{- $_ := set $s "defaultQueue" $v.defaultQueue -}}
{{- end -}}
{{- $gs := $s.gpuSharing | default dict -}}
{{- $_ := set $gs "reservationImage" (include "muster.image" .) -}}
{{- if not $v.gpuSharing.enabled -}}
{{- $_ := set $gs "reservations" false -}}
{{- end -}}
{{- $_ := set $s "gpuSharing" $gs -}}
{{- /* muster's own default Lease namespace is muster-system (docs/config.md). */ -}}
{{- if ne $ns "muster-system" -}}
{{- $le := $s.leaderElection | default dict -}}
{{- $_ := set $le "leaseNamespace" $ns -}}
{{- $_ := set $s "leaderElection" $le -}}
{{- end -}}
{{- toYaml (mergeOverwrite $s (deepCopy ($v.musterSettings | default dict))) -}}
{{- end }}

{{/*
kube-scheduler's settings: manifests/scheduler-config.yaml filled in as render.sh does
(__KUBECONFIG__ -> "", the ServiceAccount; __MUSTER_URL__ -> from muster's listen), one profile
per scheduler name (a profile of that name in the file is kept as it is), the values over it.
*/}}
{{- define "muster.schedulerConfig" -}}
{{- $s := include "muster.settings" . | fromYaml -}}
{{- $listen := $s.listen | default "127.0.0.1:8888" -}}
{{- $port := regexReplaceAll "^.*:" $listen "" -}}
{{- $url := printf "http://%s" $listen -}}
{{- if hasPrefix "0.0.0.0:" $listen -}}
{{- $url = printf "http://127.0.0.1:%s" $port -}}
{{- else if hasPrefix "[::]:" $listen -}}
{{- $url = printf "http://[::1]:%s" $port -}}
{{- end -}}
{{- $c := index (include "muster.sourceDocs" (list . "scheduler-config.yaml") | fromYamlArray) 0 -}}
{{- with $c.clientConnection -}}
{{- if eq (toString .kubeconfig) "__KUBECONFIG__" -}}
{{- $_ := set . "kubeconfig" "" -}}
{{- end -}}
{{- end -}}
{{- range $c.extenders -}}
{{- if eq (toString .urlPrefix) "__MUSTER_URL__" -}}
{{- $_ := set . "urlPrefix" $url -}}
{{- end -}}
{{- end -}}
{{- $profiles := list -}}
{{- range $name := $s.schedulerNames -}}
{{- $p := dict "schedulerName" $name -}}
{{- range $c.profiles -}}
{{- if eq .schedulerName $name -}}
{{- $p = . -}}
{{- end -}}
{{- end -}}
{{- $profiles = append $profiles $p -}}
{{- end -}}
{{- $_ := set $c "profiles" $profiles -}}
{{- toYaml (mergeOverwrite $c (deepCopy (.Values.schedulerSettings | default dict))) -}}
{{- end }}

{{/*
The webhook's certificate when the chart makes it: made once per render (kept in
.Values for the other templates), or the one already in Secret muster-webhook-tls.
Base64 values of tls.crt, tls.key and ca.crt, as YAML.
*/}}
{{- define "muster.webhookTLS" -}}
{{- if not (hasKey .Values "__musterWebhookTLS") -}}
{{- $c := .Values.webhook.certificate -}}
{{- $ns := .Release.Namespace -}}
{{- $old := (lookup "v1" "Secret" $ns "muster-webhook-tls").data | default dict -}}
{{- $tls := dict -}}
{{- if and (not $c.rotate) (index $old "tls.crt") (index $old "tls.key") (index $old "ca.crt") -}}
{{- $tls = dict "tls.crt" (index $old "tls.crt") "tls.key" (index $old "tls.key") "ca.crt" (index $old "ca.crt") -}}
{{- else -}}
{{- $days := int $c.validityDays -}}
{{- $ca := genCA "muster-webhook-ca" $days -}}
{{- $cert := genSignedCert (printf "muster-webhook.%s.svc" $ns) nil (include "muster.webhookDNSNames" . | fromYamlArray) $days $ca -}}
{{- $tls = dict "tls.crt" ($cert.Cert | b64enc) "tls.key" ($cert.Key | b64enc) "ca.crt" ($ca.Cert | b64enc) -}}
{{- end -}}
{{- $_ := set .Values "__musterWebhookTLS" $tls -}}
{{- end -}}
{{- toYaml (get .Values "__musterWebhookTLS") -}}
{{- end }}

{{/* The names the serving certificate carries, as gen-webhook-cert.sh writes them. */}}
{{- define "muster.webhookDNSNames" -}}
{{- $ns := .Release.Namespace -}}
{{- toYaml (list "muster-webhook" (printf "muster-webhook.%s" $ns) (printf "muster-webhook.%s.svc" $ns) (printf "muster-webhook.%s.svc.cluster.local" $ns)) -}}
{{- end }}
