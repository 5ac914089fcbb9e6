package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/flotilla-gitops/flotilla/tests/env/devenv"
)

// payload is the data of every benchmark ConfigMap: about 10 KB of configuration text, the size of the
// ConfigMaps in Fleet's benchmark repository (fleet-test-data, benchmarks/), generated here.
var payload = func() string {
	var b strings.Builder
	for i := 0; b.Len() < 10*1024; i++ {
		fmt.Fprintf(&b, "    service.%03d.endpoint = https://svc-%03d.bench.example.invalid:8443/api/v1 # timeout 30s, retries 3\n", i, i)
	}
	return b.String()
}()

// bundlePath is where bundle i lives in a benchmark repository.
func bundlePath(i int) string { return fmt.Sprintf("bundles/b%02d", i) }

// bundleName is bundle i's name (fleet.yaml `name`), which is also its Helm release name.
func bundleName(i int) string { return fmt.Sprintf("b%02d", i) }

// writeRepo creates a git repository of `bundles` bundles with `cms` ConfigMaps each and returns HEAD.
func writeRepo(dir string, bundles, cms int) (string, error) {
	for i := 0; i < bundles; i++ {
		p := filepath.Join(dir, bundlePath(i))
		if err := os.MkdirAll(p, 0o755); err != nil {
			return "", err
		}
		if err := os.WriteFile(filepath.Join(p, "fleet.yaml"), []byte("name: "+bundleName(i)+"\n"), 0o644); err != nil {
			return "", err
		}
		var docs []string
		for j := 0; j < cms; j++ {
			docs = append(docs, fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s-cm-%02d\ndata:\n  settings.conf: |\n%s", bundleName(i), j, payload))
		}
		if err := os.WriteFile(filepath.Join(p, "configmaps.yaml"), []byte(strings.Join(docs, "---\n")), 0o644); err != nil {
			return "", err
		}
	}
	if _, err := devenv.Git(dir, "init", "-q", "-b", "main"); err != nil {
		return "", err
	}
	return devenv.Commit(dir, fmt.Sprintf("%d bundles of %d ConfigMaps", bundles, cms))
}
