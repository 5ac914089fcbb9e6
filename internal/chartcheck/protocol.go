package chartcheck

import (
	"encoding/gob"
	"fmt"
	"io"
	"strings"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
)

// childRequest is what the parent writes to the child's stdin: everything Helm's Install or Upgrade
// renders from. It travels as gob, not JSON, so that values keep their Go types (an int64 stays an int64,
// and a template printing it prints what Helm will print).
type childRequest struct {
	// Files are the chart's files as it was loaded (chart.Raw), subcharts included.
	Files     []chartFile
	Values    map[string]any
	Release   string
	Namespace string
	Upgrade   bool
	// Revision is the revision Helm will write: 1 for an install, the latest plus one for an upgrade.
	Revision int
	// Cluster is where lookups and capabilities come from; empty renders as `helm template` does.
	Cluster clusterAccess
}

type chartFile struct {
	Name string
	Data []byte
}

// clusterAccess is a kubeconfig on the worker's host (only its path and context travel), or one the worker
// read from a Secret (its content travels, over the child's stdin only), and the namespace lookups are
// confined to, as agentclient confines them for the real install.
type clusterAccess struct {
	Kubeconfig string
	// KubeconfigData, when set, is the kubeconfig itself; Kubeconfig then names its source in messages.
	KubeconfigData []byte `json:",omitempty"`
	Context        string
	Confine        string
}

// childAnswer is what the child writes to stdout, as JSON.
type childAnswer struct {
	// Manifest is the release's manifest as Helm stores it (before Flotilla's post-renderer).
	Manifest string `json:"manifest"`
	// Hooks are the hook manifests, in Helm's order.
	Hooks []string `json:"hooks,omitempty"`
	// Error is Helm's error: a template that fails, a schema that rejects the values.
	Error string `json:"error,omitempty"`
}

func init() {
	// Values are YAML and JSON shapes; gob must know the composite ones that hide behind `any`.
	gob.Register(map[string]any{})
	gob.Register([]any{})
}

func chartFiles(c *chart.Chart) ([]chartFile, error) {
	if len(c.Raw) == 0 {
		return nil, fmt.Errorf("chart %q has no files to check (it was not loaded from files)", c.Name())
	}
	if len(c.Dependencies()) == 0 {
		files := make([]chartFile, len(c.Raw))
		for i, f := range c.Raw {
			files[i] = chartFile{Name: f.Name, Data: f.Data}
		}
		return files, nil
	}
	// Subcharts fetched for Chart.yaml dependencies were added after loading, so the parent's files do not
	// hold them: every subchart is written under charts/ from its own files, vendored ones included, each in
	// a folder of its own (two aliases may use one chart).
	var files []chartFile
	for _, f := range c.Raw {
		if !strings.HasPrefix(f.Name, "charts/") {
			files = append(files, chartFile{Name: f.Name, Data: f.Data})
		}
	}
	for i, dep := range c.Dependencies() {
		sub, err := chartFiles(dep)
		if err != nil {
			return nil, err
		}
		dir := fmt.Sprintf("charts/%d-%s/", i, dep.Name())
		for _, f := range sub {
			files = append(files, chartFile{Name: dir + f.Name, Data: f.Data})
		}
	}
	return files, nil
}

// loadChart rebuilds the chart from its files exactly as render loaded it.
func (r childRequest) loadChart() (*chart.Chart, error) {
	files := make([]*loader.BufferedFile, len(r.Files))
	for i, f := range r.Files {
		files[i] = &loader.BufferedFile{Name: f.Name, Data: f.Data}
	}
	return loader.LoadFiles(files)
}

func readRequest(r io.Reader) (childRequest, error) {
	var req childRequest
	if err := gob.NewDecoder(r).Decode(&req); err != nil {
		return childRequest{}, fmt.Errorf("reading the render request: %w", err)
	}
	return req, nil
}
