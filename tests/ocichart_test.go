package tests

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flotilla-gitops/flotilla/api"
	"github.com/flotilla-gitops/flotilla/fleet"
	"github.com/flotilla-gitops/flotilla/tests/env/localk8s"
	"github.com/flotilla-gitops/flotilla/tests/harness"
	"github.com/flotilla-gitops/flotilla/tests/testsrv/chartrepo"
	"github.com/flotilla-gitops/flotilla/tests/testsrv/registry"
	"github.com/flotilla-gitops/flotilla/tests/testsrv/testchart"
)

const registryPassword = "registry-pa55word"

// Charts from an OCI registry (the CNCF distribution registry, TLS and htpasswd): a repository chart whose
// Chart.yaml dependency comes from the registry is built as `helm dependency build` would, and a chart
// deployed by oci:// reference; the registry's credentials go only to oci:// URLs (helmRepoURLRegex), the
// GitRepo's caBundle trusts both servers. A dependency the registry lacks, a chart URL that is a 404 and one
// that is no chart fail their bundles alone, each naming what failed, while the others deploy.
func TestChartsFromAnOCIRegistryWithDependencies(t *testing.T) {
	t.Parallel()
	harness.RequireBinaries(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	reg, err := registry.Start(ctx, registry.Options{Dir: t.TempDir(), Username: "fleet", Password: registryPassword})
	require.NoError(t, err)
	t.Cleanup(func() { _ = reg.Stop() })
	_, err = reg.Push(testchart.New("redis", "17.1.0"), "charts")
	require.NoError(t, err)
	redis := testchart.New("redis", "17.2.0")
	_, err = reg.Push(redis, "charts")
	require.NoError(t, err)
	web, err := reg.Push(testchart.New("web", "1.0.0"), "charts")
	require.NoError(t, err)
	files, err := chartrepo.Start(chartrepo.Options{Dir: filepath.Join(t.TempDir(), "files")})
	require.NoError(t, err)
	t.Cleanup(func() { _ = files.Close() })
	require.NoError(t, files.PutFile("notachart.tgz", []byte("<html>hello</html>")))

	creds := filepath.Join(t.TempDir(), "credentials.yaml")
	require.NoError(t, os.WriteFile(creds, []byte("registry:\n  username: fleet\n  password: "+registryPassword+"\n"), 0o600))
	s := harness.Start(t, harness.Options{Clusters: []localk8s.ClusterOptions{{Name: "k"}}, WorkerArgs: []string{"--credentials", creds}})
	confinedCluster(s, "one", "k")
	oci := "oci://" + reg.Host + "/charts"
	git := s.NewRepo(map[string]string{
		"app/fleet.yaml":              "helm:\n  chart: ./chart\n  releaseName: app\n",
		"app/chart/Chart.yaml":        fmt.Sprintf("apiVersion: v2\nname: app\nversion: 0.1.0\ndependencies:\n- name: redis\n  version: \"^17\"\n  repository: %s\n", oci),
		"app/chart/templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\ndata:\n  redis: {{ .Values.redis.message | quote }}\n",
		"web/fleet.yaml":              fmt.Sprintf("helm:\n  chart: %s/web\n  version: 1.0.0\n  releaseName: web\n", oci),
		"nodep/fleet.yaml":            "helm:\n  chart: ./chart\n  releaseName: nodep\n",
		"nodep/chart/Chart.yaml":      fmt.Sprintf("apiVersion: v2\nname: nodep\nversion: 0.1.0\ndependencies:\n- name: nope\n  version: \"^1\"\n  repository: %s\n", oci),
		"gone/fleet.yaml":             fmt.Sprintf("helm:\n  chart: %s/gone-1.0.0.tgz\n  releaseName: gone\n", files.URL),
		"html/fleet.yaml":             fmt.Sprintf("helm:\n  chart: %s/notachart.tgz\n  releaseName: html\n", files.URL),
	})
	s.StartGitRepo(api.GitRepoInput{
		GitRepo: fleet.GitRepo{Metadata: fleet.ObjectMeta{Name: "oci"}, Spec: fleet.GitRepoSpec{Repo: git.URL(), Branch: "main",
			PollingInterval: "1s", HelmSecretName: "registry", HelmRepoURLRegex: "^oci://",
			CABundle: append(append([]byte{}, reg.CAPEM...), files.CAPEM...),
			Targets:  []fleet.GitTarget{{ClusterSelector: &metav1.LabelSelector{}}}}},
		Flotilla: &api.RunOptions{CheckInterval: "2s"},
	})
	st := s.WaitStatus("oci", 3*time.Minute, "app and web Ready, the three broken bundles failing", func(st api.GitRepoStatus) bool {
		one, _ := harness.Cluster(st, "one")
		return bundleState(one, "oci-app") == api.StateReady && bundleState(one, "oci-web") == api.StateReady &&
			bundleState(one, "oci-nodep") == api.StateErrApplied && bundleState(one, "oci-gone") == api.StateErrApplied &&
			bundleState(one, "oci-html") == api.StateErrApplied
	})
	one, _ := harness.Cluster(st, "one")
	messages := map[string]string{}
	for _, b := range one.Bundles {
		messages[b.Name] = b.Message
		if b.Name == "oci-web" {
			require.Equal(t, "1.0.0", b.ChartVersion)
			require.Equal(t, web.Digest, b.ChartDigest)
		}
	}
	require.Contains(t, messages["oci-nodep"], `dependency "nope"`)
	require.Contains(t, messages["oci-nodep"], oci, "the message names the repository")
	require.Contains(t, messages["oci-gone"], "404")
	require.Contains(t, messages["oci-gone"], files.URL+"/gone-1.0.0.tgz")
	require.Contains(t, messages["oci-html"], "not a chart archive")
	t.Logf("messages: %v", messages)

	require.Equal(t, "hello from redis", s.ConfigMapData("k", "one", "app")["redis"], "the dependency's values reach the parent")
	require.Equal(t, "17.2.0", s.ConfigMapData("k", "one", "app-redis")["version"], "the newest version matching ^17")
	require.Equal(t, "1.0.0", s.ConfigMapData("k", "one", "web-web")["version"])
	assertNowhere(t, s, registryPassword)
	require.False(t, strings.Contains(fmt.Sprint(st), registryPassword))
}
