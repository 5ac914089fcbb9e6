package localk8s

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/flotilla-gitops/flotilla/tests/env/needs"
)

func binDir(t *testing.T) string {
	return needs.LocalClusters(t)
}

// Two clusters on one etcd: the one with workloads runs a Deployment to Ready; a stopped apiserver comes
// back with its data; every process is gone after Stop.
func TestClustersRunWorkloadsAndSurviveAnAPIServerRestart(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	env, err := Start(ctx, Options{Dir: t.TempDir(), BinDir: binDir(t), Logger: t.Logf,
		Clusters: []ClusterOptions{{Name: "full", Workloads: true}, {Name: "lean"}}})
	require.NoError(t, err)
	defer env.Stop()

	cs := clientset(t, env.Kubeconfig("full"))
	createDemo(ctx, t, cs, 2)

	lean := clientset(t, env.Kubeconfig("lean"))
	_, err = lean.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "keep"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = cs.CoreV1().ConfigMaps("default").Get(ctx, "keep", metav1.GetOptions{})
	require.Error(t, err, "clusters are isolated")

	require.NoError(t, env.StopAPIServer("lean"))
	_, err = lean.CoreV1().ConfigMaps("default").Get(ctx, "keep", metav1.GetOptions{})
	require.Error(t, err)
	require.NoError(t, env.StartAPIServer(ctx, "lean"))
	_, err = lean.CoreV1().ConfigMaps("default").Get(ctx, "keep", metav1.GetOptions{})
	require.NoError(t, err)

	require.NoError(t, env.Stop())
	pids, _ := filepath.Glob(filepath.Join(env.PIDDir(), "*.pid"))
	require.Empty(t, pids, "every pid file is removed once its process is stopped")
}

func clientset(t *testing.T, kubeconfig string) *kubernetes.Clientset {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	require.NoError(t, err)
	cs, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	return cs
}

// The fake node stays alive: kwok renews its lease well inside the node-monitor grace period, so the node
// stays Ready and a Deployment stays Available however long the cluster lives (`make up` runs for hours).
func TestTheFakeNodeHeartbeatsWellInsideTheGracePeriod(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	env, err := Start(ctx, Options{Dir: t.TempDir(), BinDir: binDir(t), Logger: t.Logf,
		Clusters: []ClusterOptions{{Name: "edge", Workloads: true}}})
	require.NoError(t, err)
	defer env.Stop()
	cs := clientset(t, env.Kubeconfig("edge"))
	createDemo(ctx, t, cs, 1)

	// Watch three lease renewals: each must come well inside the grace period (a quarter of it, which
	// leaves room for a loaded machine), and the node and the Deployment must stay healthy throughout.
	var renewals []time.Time
	deadline := time.Now().Add(2 * time.Minute)
	for len(renewals) < 4 && time.Now().Before(deadline) {
		lease, err := cs.CoordinationV1().Leases("kube-node-lease").Get(ctx, "kwok-node-0", metav1.GetOptions{})
		if err == nil && lease.Spec.RenewTime != nil {
			at := lease.Spec.RenewTime.Time
			if len(renewals) == 0 || at.After(renewals[len(renewals)-1]) {
				renewals = append(renewals, at)
			}
		}
		node, err := cs.CoreV1().Nodes().Get(ctx, "kwok-node-0", metav1.GetOptions{})
		require.NoError(t, err)
		for _, c := range node.Status.Conditions {
			if c.Type == corev1.NodeReady {
				require.Equal(t, corev1.ConditionTrue, c.Status, "node Ready: %s", c.Message)
			}
		}
		d, err := cs.AppsV1().Deployments("default").Get(ctx, "demo", metav1.GetOptions{})
		require.NoError(t, err)
		require.EqualValues(t, 1, d.Status.AvailableReplicas, "the Deployment stays Available")
		time.Sleep(time.Second) // a sampling interval, not a wait for readiness
	}
	require.Len(t, renewals, 4, "the node lease is renewed (kwok without a lease never creates one)")
	for i := 1; i < len(renewals); i++ {
		require.Less(t, renewals[i].Sub(renewals[i-1]), NodeMonitorGracePeriod/4, "renewal %d", i)
	}
}

// createDemo creates the Deployment "demo" and waits until kwok makes its replicas ready and available.
func createDemo(ctx context.Context, t *testing.T, cs kubernetes.Interface, replicas int32) {
	t.Helper()
	labels := map[string]string{"app": "demo"}
	_, err := cs.AppsV1().Deployments("default").Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "demo"},
		Spec: appsv1.DeploymentSpec{Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.invalid/demo"}}}}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		d, err := cs.AppsV1().Deployments("default").Get(ctx, "demo", metav1.GetOptions{})
		return err == nil && d.Status.ReadyReplicas == replicas && d.Status.AvailableReplicas == replicas
	}, 2*time.Minute, 200*time.Millisecond)
}
