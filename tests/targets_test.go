package tests

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flotilla-gitops/flotilla/api"
	"github.com/flotilla-gitops/flotilla/tests/env/localk8s"
	"github.com/flotilla-gitops/flotilla/tests/harness"
)

// A Fleet user's quick start writes no targets: the bundle goes to the "default" ClusterGroup, which holds
// every registered cluster until the user defines their own. Targets that match nothing, and a bundle
// that targetCustomizations send nowhere, are not Ready, and say why in status, CLI and Web UI.
func TestTargetsLeftOutDeployToTheDefaultGroupAndNowhereIsNotReady(t *testing.T) {
	t.Parallel()
	s := harness.Start(t, harness.Options{Clusters: []localk8s.ClusterOptions{{Name: "a"}}})
	repo := s.NewRepo(map[string]string{
		"app/cm.yaml":        fmt.Sprintf(configMapV, "1"),
		"skipped/cm.yaml":    fmt.Sprintf(configMapV, "2"),
		"skipped/fleet.yaml": "targetCustomizations:\n- name: not-here\n  clusterName: a\n  doNotDeploy: true\n",
	})
	s.AddCluster("a", "a", map[string]string{"env": "dev"}, nil)

	s.Apply(harness.GitRepoYAML("quick", repo.URL(), "  paths: [app]\n  targetNamespace: quick\n"))
	st := s.WaitStatus("quick", 2*time.Minute, "Ready on the default group", harness.AllReady)
	require.Equal(t, 1, st.DesiredReadyClusters)
	require.Equal(t, "1", s.ConfigMapData("a", "quick", "app")["v"])

	s.Apply(harness.GitRepoYAML("astray", repo.URL(), "  paths: [app]\n  targetNamespace: astray\n  targets: [{clusterSelector: {matchLabels: {env: prod}}}]\n"))
	st = s.WaitStatus("astray", 2*time.Minute, "planned", func(st api.GitRepoStatus) bool { return st.Commit != "" })
	require.Equal(t, api.StateNotReady, st.State)
	require.Contains(t, st.Message, "no registered cluster matches the targets")
	require.Contains(t, s.CLIRun("status", "astray"), "no registered cluster matches the targets")
	require.Eventually(t, func() bool { // visibility trails the workflow by a moment
		return s.CountWorkflows(`WorkflowId = "gitrepo/astray" AND FlotillaState = "NotReady"`) == 1
	}, harness.Patience(2*time.Minute), 250*time.Millisecond, "the Web UI's list shows it NotReady")

	// The cluster appears with the label: the same GitRepo deploys and becomes Ready.
	s.AddCluster("a", "a", map[string]string{"env": "prod"}, nil)
	s.WaitStatus("astray", 2*time.Minute, "Ready once a cluster matches", harness.AllReady)

	s.Apply(harness.GitRepoYAML("sparse", repo.URL(), "  paths: [app, skipped]\n  targetNamespace: sparse\n"))
	st = s.WaitStatus("sparse", 2*time.Minute, "the skipped bundle reported nowhere", func(st api.GitRepoStatus) bool {
		return st.ReadyClusters == 1 && strings.Contains(st.Message, "no registered cluster matches its targets")
	})
	require.Equal(t, api.StateNotReady, st.State)
	require.Contains(t, st.Message, `bundle "sparse-skipped"`)
}
