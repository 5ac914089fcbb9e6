{{- define "flotilla.fullname" -}}
{{- if contains .Chart.Name .Release.Name }}{{ .Release.Name | trunc 63 | trimSuffix "-" }}{{ else }}{{ printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" }}{{ end }}
{{- end }}

{{- define "flotilla.labels" -}}
app.kubernetes.io/name: flotilla
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end }}

{{- define "flotilla.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end }}

{{/* The connection to Temporal, the same for every process. */}}
{{- define "flotilla.temporalEnv" -}}
- name: TEMPORAL_ADDRESS
  value: {{ required "temporal.address is required" .Values.temporal.address | quote }}
- name: TEMPORAL_NAMESPACE
  value: {{ .Values.temporal.namespace | quote }}
- name: FLOTILLA_TASK_QUEUE
  value: {{ .Values.temporal.taskQueue | quote }}
{{- if .Values.temporal.tls.enabled }}
- name: TEMPORAL_TLS
  value: "true"
{{- if .Values.temporal.tls.secretName }}
- name: TEMPORAL_TLS_SERVER_CA_CERT_PATH
  value: /etc/flotilla/temporal-tls/ca.crt
- name: TEMPORAL_TLS_CLIENT_CERT_PATH
  value: /etc/flotilla/temporal-tls/tls.crt
- name: TEMPORAL_TLS_CLIENT_KEY_PATH
  value: /etc/flotilla/temporal-tls/tls.key
{{- end }}
{{- if .Values.temporal.tls.serverName }}
- name: TEMPORAL_TLS_SERVER_NAME
  value: {{ .Values.temporal.tls.serverName | quote }}
{{- end }}
{{- end }}
{{- if .Values.temporal.apiKeySecret.name }}
- name: FLOTILLA_API_KEY_FILE
  value: /etc/flotilla/temporal-api-key/{{ .Values.temporal.apiKeySecret.key }}
{{- end }}
{{- if .Values.temporal.codecKeySecret.name }}
- name: FLOTILLA_CODEC_KEY_FILE
  value: /etc/flotilla/codec/{{ .Values.temporal.codecKeySecret.key }}
{{- end }}
{{- end }}

{{- define "flotilla.temporalVolumeMounts" -}}
{{- if and .Values.temporal.tls.enabled .Values.temporal.tls.secretName }}
- {name: temporal-tls, mountPath: /etc/flotilla/temporal-tls, readOnly: true}
{{- end }}
{{- if .Values.temporal.apiKeySecret.name }}
- {name: temporal-api-key, mountPath: /etc/flotilla/temporal-api-key, readOnly: true}
{{- end }}
{{- if .Values.temporal.codecKeySecret.name }}
- {name: codec, mountPath: /etc/flotilla/codec, readOnly: true}
{{- end }}
{{- end }}

{{- define "flotilla.temporalVolumes" -}}
{{- if and .Values.temporal.tls.enabled .Values.temporal.tls.secretName }}
- {name: temporal-tls, secret: {secretName: {{ .Values.temporal.tls.secretName }}}}
{{- end }}
{{- if .Values.temporal.apiKeySecret.name }}
- {name: temporal-api-key, secret: {secretName: {{ .Values.temporal.apiKeySecret.name }}}}
{{- end }}
{{- if .Values.temporal.codecKeySecret.name }}
- {name: codec, secret: {secretName: {{ .Values.temporal.codecKeySecret.name }}}}
{{- end }}
{{- end }}
