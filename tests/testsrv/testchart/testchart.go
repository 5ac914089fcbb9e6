// Package testchart builds small Helm charts and packages them with the Helm SDK, for the chart servers
// that tests and benchmarks start.
package testchart

import (
	"fmt"
	"os"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
)

// New is a chart named name at version with one ConfigMap template, <release>-<chart name> (an alias
// when it is a subchart with one), holding the chart's version and the value `message`; and, when given,
// Chart.yaml dependencies.
func New(name, version string, deps ...*chart.Dependency) *chart.Chart {
	const tmpl = `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-{{ .Chart.Name }}
data:
  chart: {{ .Chart.Name | quote }}
  version: {{ .Chart.Version | quote }}
  message: {{ .Values.message | quote }}
`
	return &chart.Chart{
		Metadata: &chart.Metadata{APIVersion: chart.APIVersionV2, Name: name, Version: version, Type: "application",
			Dependencies: deps},
		Values:    map[string]any{"message": "hello from " + name},
		Raw:       []*chart.File{{Name: "values.yaml", Data: []byte(fmt.Sprintf("message: hello from %s\n", name))}},
		Templates: []*chart.File{{Name: "templates/configmap.yaml", Data: []byte(tmpl)}},
	}
}

// Package is the chart's .tgz archive as `helm package` writes it (chartutil.Save).
func Package(c *chart.Chart) ([]byte, error) {
	dir, err := os.MkdirTemp("", "testchart")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	path, err := chartutil.Save(c, dir)
	if err != nil {
		return nil, fmt.Errorf("packaging chart %s-%s: %w", c.Name(), c.Metadata.Version, err)
	}
	return os.ReadFile(path)
}
