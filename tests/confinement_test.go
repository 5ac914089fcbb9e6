package tests

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flotilla-gitops/flotilla/api"
	"github.com/flotilla-gitops/flotilla/tests/env/devenv"
	"github.com/flotilla-gitops/flotilla/tests/env/localk8s"
	"github.com/flotilla-gitops/flotilla/tests/harness"
)

// Anyone who can push to a watched repository must not be able to read the worker's disk. The probe that
// did: a committed folder link leaving the checkout, and files linked through it whose own targets read as
// paths inside the repository. Both a values file and a manifest reached that way are refused, naming the
// path, and nothing of the file reaches the cluster or the status; a bundle beside them deploys.
func TestARepositoryCannotReadTheWorkersFilesThroughChainedSymlinks(t *testing.T) {
	t.Parallel()
	s := harness.Start(t, harness.Options{Clusters: []localk8s.ClusterOptions{{Name: "a"}}})
	workerFiles := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(workerFiles, "creds.yaml"),
		[]byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: stolen\ndata:\n  token: hunter2-secret\n"), 0o600))

	chart := "apiVersion: v2\nname: c\nversion: 0.1.0\n"
	repo := s.NewRepo(map[string]string{
		"good/cm.yaml":            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: good\ndata:\n  ok: \"yes\"\n",
		"good/fleet.yaml":         "name: good\ndefaultNamespace: good\n",
		"values/fleet.yaml":       "name: values\ndefaultNamespace: values\nhelm:\n  chart: ./chart\n  valuesFiles: [values.yaml]\n",
		"values/chart/Chart.yaml": chart,
		"values/chart/templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: leak\n" +
			"data:\n  all: {{ toYaml .Values | quote }}\n",
		"manifest/fleet.yaml": "name: manifest\ndefaultNamespace: manifest\n",
	})
	up, err := filepath.Rel(repo.Dir, workerFiles)
	require.NoError(t, err)
	require.NoError(t, os.Symlink(up, filepath.Join(repo.Dir, "hostdir")))
	require.NoError(t, os.Symlink("../hostdir/creds.yaml", filepath.Join(repo.Dir, "values", "values.yaml")))
	require.NoError(t, os.Symlink("../hostdir/creds.yaml", filepath.Join(repo.Dir, "manifest", "cm.yaml")))
	_, err = devenv.Commit(repo.Dir, "links that leave the repository through another link")
	require.NoError(t, err)

	s.AddCluster("a", "a", nil, nil)
	s.Apply(harness.GitRepoYAML("chain", repo.URL(), "  targets: [{clusterName: a}]\n"))

	st := s.WaitStatus("chain", 2*time.Minute, "good Ready, the linked bundles failed", func(st api.GitRepoStatus) bool {
		c, ok := harness.Cluster(st, "a")
		if !ok || len(c.Bundles) != 3 {
			return false
		}
		failed := 0
		for _, b := range c.Bundles {
			if b.Name == "good" && b.State != api.StateReady {
				return false
			}
			if b.Name != "good" && b.Message != "" {
				failed++
			}
		}
		return failed == 2
	})
	c, _ := harness.Cluster(st, "a")
	for _, b := range c.Bundles {
		require.NotContains(t, b.Message, "hunter2", "bundle %s: nothing of the file shows in status", b.Name)
		switch b.Name {
		case "values":
			require.Contains(t, b.Message, `valuesFiles "values.yaml"`)
			require.Contains(t, b.Message, "resolves outside the repository")
		case "manifest":
			require.Contains(t, b.Message, `"manifest/cm.yaml"`)
			require.Contains(t, b.Message, "resolves outside the repository")
		}
	}
	require.Equal(t, "yes", s.ConfigMapData("a", "good", "good")["ok"])
	require.Nil(t, s.ConfigMapData("a", "values", "leak"), "the chart was never installed with the worker's file as values")
	require.Nil(t, s.ConfigMapData("a", "manifest", "stolen"), "the worker's file was never applied as a manifest")
}
