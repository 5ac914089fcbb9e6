package chartcheck

import (
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"

	"github.com/flotilla-gitops/flotilla/agentclient"
)

// The Checker starts this test binary as its child, exactly as the worker starts itself.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == Command {
		os.Exit(Child(os.Args[2:], os.Stdin, os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// newTestChecker checks without a cluster (as `helm template` renders) with the given limits.
func newTestChecker(t *testing.T, limits Limits) *Checker {
	t.Helper()
	exe, err := os.Executable()
	require.NoError(t, err)
	c := New(exe, nil)
	c.limits = limits
	t.Cleanup(func() { require.Empty(t, childrenOf(os.Getpid()), "a render check child is left behind") })
	return c
}

func loadChart(t *testing.T, files map[string]string) *chart.Chart {
	t.Helper()
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	var bf []*loader.BufferedFile
	for _, n := range names {
		bf = append(bf, &loader.BufferedFile{Name: n, Data: []byte(files[n])})
	}
	c, err := loader.LoadFiles(bf)
	require.NoError(t, err)
	return c
}

// chartWith is a chart named "web" whose one template is tpl.
func chartWith(t *testing.T, tpl string) *chart.Chart {
	return loadChart(t, map[string]string{
		"Chart.yaml":         "apiVersion: v2\nname: web\nversion: 0.1.0\n",
		"templates/web.yaml": tpl,
	})
}

// install is a first install of c on cluster edge-1; the deployment ID stands for c's files and the values,
// as render's does.
func install(c *chart.Chart, values map[string]any) Request {
	h := sha256.New()
	for _, f := range c.Raw {
		fmt.Fprintf(h, "%s\x00%d\x00%s", f.Name, len(f.Data), f.Data)
	}
	fmt.Fprintf(h, "%v", values)
	return Request{Cluster: "edge-1", ClusterDigest: "d1", DeploymentID: fmt.Sprintf("s-%x", h.Sum(nil))[:42],
		Apply: agentclient.ApplyRequest{Name: "web", Namespace: "shop", Chart: c, Values: values}}
}

// childrenOf lists the processes whose parent is pid, from /proc.
func childrenOf(pid int) []int {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	var out []int
	for _, s := range stats {
		data, err := os.ReadFile(s)
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...; comm may hold spaces, so read after the last ')'.
		fields := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+1:]))
		if len(fields) > 1 && fields[1] == strconv.Itoa(pid) {
			child, _ := strconv.Atoi(filepath.Base(filepath.Dir(s)))
			out = append(out, child)
		}
	}
	return out
}
