package tests

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flotilla-gitops/flotilla/api"
	"github.com/flotilla-gitops/flotilla/internal/metrics"
	"github.com/flotilla-gitops/flotilla/tests/env/localk8s"
	"github.com/flotilla-gitops/flotilla/tests/env/proc"
	"github.com/flotilla-gitops/flotilla/tests/harness"
)

// A worker on --metrics-listen counts a rollout as it happens: three bundles on two clusters are six
// installs, a change to one bundle two upgrades more, and nothing failed; the clusters gauge reaches two
// Ready clusters for the GitRepo; checks, git operations and the SDK's own worker metrics are there too.
func TestMetricsFollowARollout(t *testing.T) {
	t.Parallel()
	port, err := proc.FreePort()
	require.NoError(t, err)
	url := fmt.Sprintf("http://127.0.0.1:%d/metrics", port)
	s := harness.Start(t, harness.Options{Clusters: []localk8s.ClusterOptions{{Name: "a"}, {Name: "b"}},
		WorkerArgs: []string{"--metrics-listen", fmt.Sprintf("127.0.0.1:%d", port)}})

	before := waitScrape(t, url, 30*time.Second, func(m scraped) bool { return m.has(metrics.GitDuration) })
	require.Zero(t, before.sum(metrics.BundleApplies, nil), "no applies before any GitRepo")

	cm := func(name, v string) string {
		return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\ndata:\n  v: \"" + v + "\"\n"
	}
	files := map[string]string{}
	for _, b := range []string{"one", "two", "three"} {
		files[b+"/fleet.yaml"] = "defaultNamespace: metrics-" + b + "\n"
		files[b+"/cm.yaml"] = cm(b, "1")
	}
	repo := s.NewRepo(files)
	s.AddCluster("a", "a", nil, nil)
	s.AddCluster("b", "b", nil, nil)
	s.Apply(harness.GitRepoYAML("m", repo.URL(), "  targets: [{clusterName: a}, {clusterName: b}]\n"))
	s.WaitStatus("m", 3*time.Minute, "every cluster Ready", func(st api.GitRepoStatus) bool {
		return harness.AllReady(st) && st.Summary.Ready == 6
	})

	installed := map[string]string{"action": string(api.ActionInstall), "result": metrics.ResultOK}
	after := waitScrape(t, url, 30*time.Second, func(m scraped) bool { return m.sum(metrics.BundleApplies, installed) >= 6 })
	require.Equal(t, 6.0, after.sum(metrics.BundleApplies, installed), "3 bundles × 2 clusters installed once each")
	require.Zero(t, after.sum(metrics.BundleApplies, map[string]string{"result": metrics.ResultError}))
	require.Positive(t, after.sum(metrics.ApplyDuration+"_count", nil))
	require.Positive(t, after.sum(metrics.ObserveDuration+"_count", nil))
	require.Positive(t, after.sum(metrics.GitDuration+"_count", map[string]string{"op": metrics.GitLsRemote}))
	require.Positive(t, after.sum(metrics.GitDuration+"_count", map[string]string{"op": metrics.GitCheckout}))
	require.Zero(t, after.sum(metrics.GitErrors, nil))
	// The SDK's worker metrics, through the same endpoint.
	require.Positive(t, after.sum("temporal_activity_execution_latency_seconds_count", map[string]string{"activity_type": api.ActivityApply}))
	require.Positive(t, after.sum("temporal_workflow_task_execution_latency_seconds_count", nil))
	require.True(t, after.has("temporal_worker_task_slots_available"), "task slots")
	require.True(t, after.has("temporal_num_pollers"), "pollers")

	ready := map[string]string{"gitrepo": "m", "namespace": api.DefaultNamespace, "state": api.StateReady}
	waitScrape(t, url, 2*metrics.ClusterRefresh+30*time.Second, func(m scraped) bool { return m.sum(metrics.Clusters, ready) == 2 })

	// The rollout moves on: one bundle changes, and its two releases are upgraded, nothing else.
	repo.Commit(map[string]string{"two/cm.yaml": cm("two", "2")}, "two changes")
	upgraded := map[string]string{"action": string(api.ActionUpgrade), "result": metrics.ResultOK}
	end := waitScrape(t, url, 3*time.Minute, func(m scraped) bool { return m.sum(metrics.BundleApplies, upgraded) >= 2 })
	require.Equal(t, 2.0, end.sum(metrics.BundleApplies, upgraded))
	require.Equal(t, 6.0, end.sum(metrics.BundleApplies, installed))
	require.Zero(t, end.sum(metrics.BundleApplies, map[string]string{"result": metrics.ResultError}))
	s.WaitStatus("m", 2*time.Minute, "every cluster Ready after the change", harness.AllReady)
	final := waitScrape(t, url, 2*metrics.ClusterRefresh+30*time.Second, func(m scraped) bool { return m.sum(metrics.Clusters, ready) == 2 })

	// The dashboard cannot drift from what a worker serves: each metric it names is in the scrape, but
	// for the SDK's failure counters, which it creates at the first failure and this rollout has none of.
	dashboard, err := os.ReadFile(filepath.Join(harness.Root(), "docs", "grafana", "flotilla.json"))
	require.NoError(t, err)
	names, err := metrics.DashboardMetrics(dashboard)
	require.NoError(t, err)
	for _, n := range names {
		if strings.HasPrefix(n, "temporal_") && strings.HasSuffix(n, "_failed_total") {
			continue
		}
		require.True(t, final.has(n), "the dashboard names %s, which the worker does not serve", n)
	}
}

// scraped is one scrape in Prometheus's text format: each sample's name, labels and value.
type scraped []sample

type sample struct {
	name   string
	labels map[string]string
	value  float64
}

func (m scraped) has(name string) bool {
	for _, s := range m {
		if s.name == name || strings.HasPrefix(s.name, name+"_") {
			return true
		}
	}
	return false
}

// sum adds the samples of name whose labels include match.
func (m scraped) sum(name string, match map[string]string) float64 {
	total := 0.0
next:
	for _, s := range m {
		if s.name != name {
			continue
		}
		for k, v := range match {
			if s.labels[k] != v {
				continue next
			}
		}
		total += s.value
	}
	return total
}

// waitScrape scrapes until cond holds, failing after timeout with the last scrape; a failed scrape is
// tried again.
func waitScrape(t *testing.T, url string, timeout time.Duration, cond func(scraped) bool) scraped {
	t.Helper()
	var last scraped
	var lastErr error
	deadline := time.Now().Add(timeout)
	for {
		m, err := scrape(url)
		if err == nil && cond(m) {
			return m
		}
		last, lastErr = m, err
		if time.Now().After(deadline) {
			t.Fatalf("metrics at %s: condition not met in %s (last error %v); flotilla samples: %v", url, timeout, lastErr, flotillaSamples(last))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func flotillaSamples(m scraped) []sample {
	var out []sample
	for _, s := range m {
		if strings.HasPrefix(s.name, "flotilla_") && !strings.Contains(s.name, "_bucket") {
			out = append(out, s)
		}
	}
	return out
}

func scrape(url string) (scraped, error) {
	resp, err := http.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return nil, fmt.Errorf("%s: %s", resp.Status, b)
	}
	var out scraped
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			return nil, fmt.Errorf("sample %q", line)
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			return nil, fmt.Errorf("sample %q: %w", line, err)
		}
		s := sample{name: line[:i], labels: map[string]string{}, value: v}
		if j := strings.IndexByte(s.name, '{'); j >= 0 {
			s.labels = parseLabels(strings.TrimSuffix(s.name[j+1:], "}"))
			s.name = s.name[:j]
		}
		out = append(out, s)
	}
	return out, sc.Err()
}

// parseLabels reads `a="x",b="y"`; the values the test matches hold no quotes or commas.
func parseLabels(s string) map[string]string {
	out := map[string]string{}
	for _, kv := range strings.Split(s, "\",") {
		k, v, ok := strings.Cut(kv, "=\"")
		if ok {
			out[k] = strings.TrimSuffix(v, "\"")
		}
	}
	return out
}
