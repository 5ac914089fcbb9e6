package tests

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/lint/support"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-gitops/flotilla/internal/fleetcrd"
	"github.com/flotilla-gitops/flotilla/tests/env/localk8s"
	"github.com/flotilla-gitops/flotilla/tests/env/needs"
	"github.com/flotilla-gitops/flotilla/tests/harness"
)

var chartDir = filepath.Join(harness.Root(), "deploy", "chart")

// renderChart is `helm template` of Flotilla's chart with vals.
func renderChart(t *testing.T, vals map[string]any) string {
	t.Helper()
	ch, err := loader.Load(chartDir)
	require.NoError(t, err)
	install := action.NewInstall(&action.Configuration{})
	install.DryRun, install.ClientOnly, install.ReleaseName, install.Namespace = true, true, "flotilla", "flotilla-system"
	rel, err := install.Run(ch, vals)
	require.NoError(t, err)
	return rel.Manifest
}

// The chart lints clean with its defaults and with every option set.
func TestTheChartLints(t *testing.T) {
	for _, vals := range []map[string]any{nil, everyChartOption()} {
		res := action.NewLint().Run([]string{chartDir}, vals)
		for _, m := range res.Messages {
			require.Less(t, m.Severity, support.WarningSev, "%s", m)
		}
		require.Empty(t, res.Errors)
	}
}

func everyChartOption() map[string]any {
	return map[string]any{
		"temporal": map[string]any{"address": "tenant.tmprl.cloud:7233", "namespace": "tenant", "taskQueue": "edge",
			"tls":          map[string]any{"enabled": true, "secretName": "temporal-mtls", "serverName": "tenant.tmprl.cloud"},
			"apiKeySecret": map[string]any{"name": "temporal-key"}, "codecKeySecret": map[string]any{"name": "codec"}},
		"controller": map[string]any{"installCRDs": false, "replicas": 2},
		"worker": map[string]any{"replicas": 5, "credentialsSecret": "git-creds", "installationKeySecret": "install-key",
			"allowChartNetworks": "10.0.0.0/8", "extraArgs": []any{"--bundle-concurrency=4"}},
	}
}

// What the values say reaches the processes: the Temporal address, TLS and keys as the environment the
// binaries read, the replicas, and --skip-crds when the chart's user installs the definitions.
func TestTheChartRendersItsValues(t *testing.T) {
	defaults := renderChart(t, nil)
	require.Contains(t, defaults, "command: [flotilla-controller]")
	require.Contains(t, defaults, "command: [flotilla-worker]")
	require.Contains(t, defaults, "replicas: 2")
	require.Contains(t, defaults, "value: \"temporal-frontend:7233\"")
	require.Contains(t, defaults, "{name: FLOTILLA_MANAGEMENT_KUBECONFIG, value: in-cluster}")
	require.NotContains(t, defaults, "TEMPORAL_TLS")
	require.NotContains(t, defaults, "--skip-crds")

	all := renderChart(t, everyChartOption())
	for _, want := range []string{"replicas: 5", "--skip-crds", "value: \"tenant.tmprl.cloud:7233\"", "name: TEMPORAL_TLS\n",
		"value: /etc/flotilla/temporal-tls/tls.crt", "value: \"tenant.tmprl.cloud\"", "value: /etc/flotilla/temporal-api-key/api-key",
		"value: /etc/flotilla/codec/codec-key", "{name: FLOTILLA_CREDENTIALS, value: /etc/flotilla/credentials}",
		"value: /etc/flotilla/installation-key/key", "--bundle-concurrency=4", "secretName: temporal-mtls", "value: \"edge\""} {
		require.Contains(t, all, want)
	}
	require.NotContains(t, all, "customresourcedefinitions", "no right to install definitions the chart's user installs")
	require.Equal(t, 2, strings.Count(all, "value: \"edge\""), "the controller and the workers on one task queue")
}

// `helm install` of the chart into a real API server creates the controller, the workers and their
// rights.
func TestTheChartInstallsOnARealAPIServer(t *testing.T) {
	t.Parallel()
	bin := needs.LocalClusters(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	env, err := localk8s.Start(ctx, localk8s.Options{Dir: t.TempDir(), BinDir: bin, Logger: t.Logf,
		Clusters: []localk8s.ClusterOptions{{Name: "mgmt"}}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = env.Stop() })
	kubeconfig := env.Kubeconfig("mgmt")

	flags := genericclioptions.NewConfigFlags(false)
	flags.KubeConfig = &kubeconfig
	ns := "flotilla-system"
	flags.Namespace = &ns
	cfg := &action.Configuration{}
	require.NoError(t, cfg.Init(flags, ns, "secret", t.Logf))
	ch, err := loader.Load(chartDir)
	require.NoError(t, err)
	install := action.NewInstall(cfg)
	install.ReleaseName, install.Namespace, install.CreateNamespace = "flotilla", ns, true
	vals, err := chartutil.ReadValues([]byte("worker:\n  replicas: 3\n"))
	require.NoError(t, err)
	rel, err := install.RunWithContext(ctx, ch, vals.AsMap())
	require.NoError(t, err)
	require.Equal(t, "deployed", rel.Info.Status.String())

	rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	require.NoError(t, err)
	cs, err := kubernetes.NewForConfig(rc)
	require.NoError(t, err)
	workers, err := cs.AppsV1().Deployments(ns).Get(ctx, "flotilla-worker", metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, int32(3), *workers.Spec.Replicas)
	_, err = cs.AppsV1().Deployments(ns).Get(ctx, "flotilla-controller", metav1.GetOptions{})
	require.NoError(t, err)

	// What the controller and the workers do, the API server's RBAC allows to the chart's service account,
	// and no more Secrets than one at a time by name.
	kubectl := needs.Binaries(t, "kubectl")
	crds, err := client.New(rc, client.Options{})
	require.NoError(t, err)
	require.NoError(t, fleetcrd.Install(ctx, crds), "the definitions, as the controller installs them")
	canI := func(verb, resource, namespace string) string {
		args := []string{"--kubeconfig", kubeconfig, "auth", "can-i", "--as=system:serviceaccount:flotilla-system:flotilla", verb, resource}
		if namespace != "" {
			args = append(args, "-n", namespace)
		}
		out, _ := exec.CommandContext(ctx, filepath.Join(kubectl, "kubectl"), args...).Output()
		return strings.TrimSpace(string(out))
	}
	for _, allowed := range [][3]string{{"watch", "gitrepos.fleet.cattle.io", ""}, {"update", "gitrepos.fleet.cattle.io/status", "team-a"},
		{"update", "helmops.fleet.cattle.io/finalizers", "team-a"}, {"list", "gitreporestrictions.fleet.cattle.io", "team-a"},
		{"create", "customresourcedefinitions.apiextensions.k8s.io", ""}, {"get", "secrets", "team-a"}, {"create", "leases.coordination.k8s.io", ns}} {
		require.Equal(t, "yes", canI(allowed[0], allowed[1], allowed[2]), "%v", allowed)
	}
	for _, refused := range [][3]string{{"list", "secrets", "team-a"}, {"create", "gitrepos.fleet.cattle.io", "team-a"},
		{"create", "leases.coordination.k8s.io", "team-a"}, {"delete", "customresourcedefinitions.apiextensions.k8s.io", ""}} {
		require.Equal(t, "no", canI(refused[0], refused[1], refused[2]), "%v", refused)
	}
}
