package agentclient

import (
	"helm.sh/helm/v3/pkg/chart"
)

// testChart is a small in-memory chart: two ConfigMaps (so CheckRelease batches them into one LIST), a
// Service and a Deployment that kwok makes Ready.
func testChart(appVersion string) *chart.Chart {
	return &chart.Chart{
		Metadata: &chart.Metadata{APIVersion: chart.APIVersionV2, Name: "web", Version: "0.1.0", AppVersion: appVersion},
		Values:   map[string]any{"greeting": "hello", "replicas": 2},
		Templates: []*chart.File{
			{Name: "templates/configmaps.yaml", Data: []byte(`apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-config
data:
  greeting: {{ .Values.greeting | quote }}
{{- if ne (toString .Values.extra) "false" }}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-extra
  labels: {tier: extra}
data:
  version: {{ .Chart.AppVersion | quote }}
{{- end }}
`)},
			{Name: "templates/service.yaml", Data: []byte(`apiVersion: v1
kind: Service
metadata:
  name: {{ .Release.Name }}
spec:
  selector: {app: {{ .Release.Name }}}
  ports:
  - port: 80
    targetPort: 8080
`)},
			{Name: "templates/deployment.yaml", Data: []byte(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}
  labels: {app: {{ .Release.Name }}}
spec:
  replicas: {{ .Values.replicas }}
  selector: {matchLabels: {app: {{ .Release.Name }}}}
  template:
    metadata:
      labels: {app: {{ .Release.Name }}}
    spec:
      {{- with .Values.nodeSelector }}
      nodeSelector: {{ toJson . }}
      {{- end }}
      containers:
      - name: web
        image: registry.invalid/web:{{ .Chart.AppVersion }}
        ports: [{containerPort: 8080}]
        resources:
          limits: {cpu: 0.5, memory: 128Mi}
`)},
		},
	}
}

// chartWith is a chart made of the given manifest only.
func chartWith(manifest string) *chart.Chart {
	return &chart.Chart{
		Metadata:  &chart.Metadata{APIVersion: chart.APIVersionV2, Name: "raw", Version: "0.1.0"},
		Templates: []*chart.File{{Name: "templates/objects.yaml", Data: []byte(manifest)}},
	}
}
