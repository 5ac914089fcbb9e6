package tests

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flotilla-gitops/flotilla/api"
	"github.com/flotilla-gitops/flotilla/tests/env/localk8s"
	"github.com/flotilla-gitops/flotilla/tests/harness"
)

// An operator drives a GitRepo through its whole life with the CLI alone: register clusters, apply a
// group and a GitRepo, read status as a script would, pause, resume, sync, remove a cluster, delete.
func TestOperatorDrivesAGitRepoWithTheCLI(t *testing.T) {
	t.Parallel()
	s := harness.Start(t, harness.Options{Clusters: []localk8s.ClusterOptions{{Name: "one"}, {Name: "two"}}})
	repo := s.NewRepo(map[string]string{"app/cm.yaml": fmt.Sprintf(configMapV, "1")})

	values := filepath.Join(s.Dir, "one-values.yaml")
	require.NoError(t, os.WriteFile(values, []byte("region: eu\n"), 0o644))
	s.CLIRun("cluster", "add", "one", "--kubeconfig", s.K8s.Kubeconfig("one"), "--label", "env=dev", "--annotation", "owner=ops", "--values", values)
	s.CLIRun("cluster", "add", "two", "--kubeconfig", s.K8s.Kubeconfig("two"), "--label", "env=test")
	s.CLIRun("cluster", "add", "two", "--kubeconfig", s.K8s.Kubeconfig("two"), "--label", "env=test") // the same again: no change
	// Re-running an add with other labels would untarget label-selected GitRepos: it takes --replace.
	res := s.CLI("cluster", "add", "two", "--kubeconfig", s.K8s.Kubeconfig("two"), "--label", "env=dev")
	require.Equal(t, 1, res.ExitCode)
	require.Contains(t, res.Stderr, `cluster "two" is registered already with other labels; add --replace`)
	s.CLIRun("cluster", "add", "two", "--replace", "--kubeconfig", s.K8s.Kubeconfig("two"), "--label", "env=dev")

	var inv struct {
		Clusters []struct {
			Metadata struct {
				Name        string            `json:"name"`
				Labels      map[string]string `json:"labels"`
				Annotations map[string]string `json:"annotations"`
			} `json:"metadata"`
			Spec struct {
				TemplateValues map[string]any `json:"templateValues"`
			} `json:"spec"`
		} `json:"clusters"`
	}
	require.NoError(t, json.Unmarshal([]byte(s.CLIRun("cluster", "list", "-o", "json")), &inv))
	clusters := inv.Clusters
	require.Len(t, clusters, 2)
	require.Equal(t, "one", clusters[0].Metadata.Name)
	require.Equal(t, "ops", clusters[0].Metadata.Annotations["owner"])
	require.Equal(t, "eu", clusters[0].Spec.TemplateValues["region"])
	require.Equal(t, "dev", clusters[1].Metadata.Labels["env"], "the add with --replace replaced the label")
	require.Contains(t, s.CLIRun("cluster", "list"), "env=dev")

	s.Apply(`apiVersion: fleet.cattle.io/v1alpha1
kind: ClusterGroup
metadata:
  name: devs
spec:
  selector:
    matchLabels: {env: dev}
---
` + fmt.Sprintf(`apiVersion: fleet.cattle.io/v1alpha1
kind: GitRepo
metadata:
  name: ops
spec:
  repo: %s
  branch: main
  pollingInterval: 1h
  paths: [app]
  targets: [{clusterGroup: devs}]
`, repo.URL()))

	// --wait prints progress on stderr and the final status on stdout.
	res = s.CLI("status", "ops", "--wait", "--timeout", "2m", "-o", "json")
	require.Equal(t, 0, res.ExitCode, res.Stderr)
	require.Contains(t, res.Stderr, "clusters ready")
	var doc map[string]any
	require.NoError(t, json.Unmarshal([]byte(res.Stdout), &doc))
	for _, key := range []string{"commit", "summary", "message", "clusters"} {
		require.Contains(t, doc, key, "status JSON contract")
	}
	require.Equal(t, float64(2), doc["summary"].(map[string]any)["desiredReady"])
	cluster := doc["clusters"].([]any)[0].(map[string]any)
	for _, key := range []string{"name", "state", "message", "resourceCounts", "bundles"} {
		require.Contains(t, cluster, key, "status JSON contract: clusters[]")
	}
	bundle := cluster["bundles"].([]any)[0].(map[string]any)
	for _, key := range []string{"name", "state", "message", "resourceCounts"} {
		require.Contains(t, bundle, key, "status JSON contract: clusters[].bundles[]")
	}
	require.Equal(t, "ops-app", bundle["name"])

	gitrepos := s.CLIRun("get", "gitrepos")
	require.Regexp(t, `ops\s.*2/2`, gitrepos)

	// Paused: a new commit is seen but does not reach the clusters, and status says so.
	s.CLIRun("pause", "ops")
	second := repo.Commit(map[string]string{"app/cm.yaml": fmt.Sprintf(configMapV, "2")}, "v2")
	s.CLIRun("sync", "ops")
	st := s.WaitStatus("ops", time.Minute, "OutOfSync while paused", func(st api.GitRepoStatus) bool {
		return st.Commit == second && st.State == api.StateOutOfSync
	})
	require.Contains(t, st.Clusters[0].Message, "paused at commit")
	require.Equal(t, "1", s.ConfigMapData("one", "default", "app")["v"])

	s.CLIRun("resume", "ops")
	st = s.WaitStatus("ops", time.Minute, "v2 everywhere after resume", harness.AllReady)
	require.Equal(t, second, st.Clusters[0].Commit, "%+v", st)
	require.Equal(t, "2", s.ConfigMapData("one", "default", "app")["v"])
	require.Equal(t, "2", s.ConfigMapData("two", "default", "app")["v"])

	// sync polls at once, although the interval is an hour.
	third := repo.Commit(map[string]string{"app/cm.yaml": fmt.Sprintf(configMapV, "3")}, "v3")
	s.CLIRun("sync", "ops")
	s.WaitStatus("ops", time.Minute, "v3 after sync", func(st api.GitRepoStatus) bool { return st.Commit == third && harness.AllReady(st) })

	// Removing a cluster from the inventory drops it from the GitRepo.
	s.CLIRun("cluster", "remove", "two")
	s.WaitStatus("ops", time.Minute, "one cluster left", func(st api.GitRepoStatus) bool {
		return st.DesiredReadyClusters == 1 && harness.AllReady(st)
	})
	require.NotContains(t, s.CLIRun("cluster", "list"), "two")

	// Errors name what is wrong; exit codes tell scripts what happened.
	res = s.CLI("status", "nope")
	require.Equal(t, 1, res.ExitCode)
	require.Contains(t, res.Stderr, `gitrepo "nope"`)
	res = s.CLI("apply", "-f", filepath.Join(s.Dir, "missing.yaml"))
	require.Equal(t, 1, res.ExitCode)
	require.Contains(t, res.Stderr, "missing.yaml")
	res = s.CLI("cluster", "add", "x")
	require.NotEqual(t, 0, res.ExitCode, "--kubeconfig is required")

	s.CLIRun("delete", "ops")
	require.Eventually(t, s.NoReleases("one", "ops"), harness.Patience(time.Minute), 200*time.Millisecond, "uninstalled")
	require.Eventually(t, func() bool {
		return s.CountWorkflows(`WorkflowId = "gitrepo/ops" AND ExecutionStatus = "Running"`) == 0
	}, harness.Patience(time.Minute), 500*time.Millisecond, "the GitRepo workflow ends")
}

// What a person sees in the Web UI: the GitRepo in the workflow list with its state, ready count, repo
// and commit as search attributes (filterable), its cluster workflows findable by cluster, and an update
// that changes the polling interval with validation.
func TestWebUIListsGitReposAndTheirClusters(t *testing.T) {
	t.Parallel()
	s := harness.Start(t, harness.Options{Clusters: []localk8s.ClusterOptions{{Name: "a"}}})
	repo := s.NewRepo(map[string]string{"app/cm.yaml": fmt.Sprintf(configMapV, "1")})
	s.AddCluster("a", "a", nil, nil)
	s.Apply(harness.GitRepoYAML("shop", repo.URL(), "  paths: [app]\n  targets: [{clusterName: a}]\n"))
	st := s.WaitStatus("shop", 2*time.Minute, "Ready", harness.AllReady)

	ui, namespace := s.TemporalUI()
	require.NotEmpty(t, ui)
	var rows []map[string]any
	require.Eventually(t, func() bool { // visibility trails the workflow by a moment
		var err error
		if rows, err = uiList(ui, namespace, `WorkflowType = "GitRepoWorkflow" AND FlotillaState = "Ready"`); err != nil {
			t.Logf("%v (retrying)", err)
			return false
		}
		return len(rows) == 1 && rows[0]["FlotillaReady"] == "1/1"
	}, harness.Patience(2*time.Minute), 250*time.Millisecond)
	require.Equal(t, "shop", rows[0]["FlotillaGitRepo"])
	require.Equal(t, repo.URL(), rows[0]["FlotillaRepo"])
	require.Equal(t, st.Commit, rows[0]["FlotillaCommit"])
	require.Equal(t, false, rows[0]["FlotillaHasError"])
	require.Equal(t, "gitrepo/shop", rows[0]["workflowId"])

	children, err := uiList(ui, namespace, `FlotillaCluster = "a"`)
	require.NoError(t, err)
	require.Len(t, children, 1)
	require.Equal(t, "gitrepo/shop/cluster/a", children[0]["workflowId"])

	update := func(input string) (string, error) {
		out, err := s.TemporalCommand(t.Context(), "workflow", "update", "execute",
			"--workflow-id", "gitrepo/shop", "--name", api.UpdateSetPollingInterval, "--input", input).CombinedOutput()
		return string(out), err
	}
	out, err := update(`{"pollingInterval":"soon"}`)
	require.Error(t, err)
	require.Contains(t, out, `not a duration`)
	out, err = update(`{"pollingInterval":"2m"}`)
	require.NoError(t, err, out)
	st = s.WaitStatus("shop", time.Minute, "the new interval", func(st api.GitRepoStatus) bool { return st.PollingInterval == "2m0s" })
	require.WithinDuration(t, st.LastPolled.Add(2*time.Minute), st.NextPoll, 13*time.Second, "next poll follows the new interval (plus ≤10%% jitter)")
}

// uiList asks the Web UI's HTTP API, as the browser does, for workflows matching a visibility query and
// returns, per workflow, its decoded search attributes plus workflowId. An answer other than 200 is an
// error, so a condition can retry it.
func uiList(ui, namespace, query string) ([]map[string]any, error) {
	resp, err := http.Get(ui + "/api/v1/namespaces/" + url.PathEscape(namespace) + "/workflows?query=" + url.QueryEscape(query))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("web UI: HTTP %d: %s", resp.StatusCode, body)
	}
	var page struct {
		Executions []struct {
			Execution struct {
				WorkflowID string `json:"workflowId"`
			} `json:"execution"`
			SearchAttributes struct {
				IndexedFields map[string]struct {
					Data string `json:"data"`
				} `json:"indexedFields"`
			} `json:"searchAttributes"`
		} `json:"executions"`
	}
	if err := json.Unmarshal(body, &page); err != nil {
		return nil, fmt.Errorf("web UI: %w: %s", err, body)
	}
	var rows []map[string]any
	for _, e := range page.Executions {
		row := map[string]any{"workflowId": e.Execution.WorkflowID}
		for k, f := range e.SearchAttributes.IndexedFields {
			raw, err := base64.StdEncoding.DecodeString(f.Data)
			if err != nil {
				return nil, fmt.Errorf("web UI: attribute %s: %w", k, err)
			}
			var v any
			if err := json.Unmarshal(raw, &v); err != nil {
				return nil, fmt.Errorf("web UI: attribute %s: %w", k, err)
			}
			row[k] = v
		}
		rows = append(rows, row)
	}
	return rows, nil
}
