package harness

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/flotilla-gitops/flotilla/api"
)

// CreateObjects creates in a backing cluster the objects of a YAML stream of the kinds an agent manifest
// holds, as an operator's `kubectl apply -f -` of `flotilla agent manifest` would for objects that do not
// exist yet (kubectl is not at hand in tests).
func (s *Stack) CreateObjects(backing string, stream []byte) {
	s.t.Helper()
	kube := s.Kube(backing)
	ctx, cancel := context.WithTimeout(context.Background(), Patience(30*time.Second))
	defer cancel()
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(stream)))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return
		}
		require.NoError(s.t, err)
		obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(doc, nil, nil)
		require.NoError(s.t, err, "%s", doc)
		opts := metav1.CreateOptions{FieldManager: "operator"}
		switch o := obj.(type) {
		case *corev1.Namespace:
			_, err = kube.CoreV1().Namespaces().Create(ctx, o, opts)
		case *corev1.ServiceAccount:
			_, err = kube.CoreV1().ServiceAccounts(o.Namespace).Create(ctx, o, opts)
		case *corev1.Secret:
			_, err = kube.CoreV1().Secrets(o.Namespace).Create(ctx, o, opts)
		case *rbacv1.ClusterRoleBinding:
			_, err = kube.RbacV1().ClusterRoleBindings().Create(ctx, o, opts)
		case *appsv1.Deployment:
			_, err = kube.AppsV1().Deployments(o.Namespace).Create(ctx, o, opts)
		default:
			err = fmt.Errorf("kind %T: not one an agent manifest holds", obj)
		}
		require.NoError(s.t, err, "%s", doc)
	}
}

// AgentStatus asks the AgentWorkflow of a fleet-default cluster of the stack's installation for its status.
func (s *Stack) AgentStatus(cluster string) (api.AgentStatus, error) {
	ctx, cancel := context.WithTimeout(context.Background(), Patience(10*time.Second))
	defer cancel()
	var st api.AgentStatus
	v, err := s.Client.QueryWorkflow(ctx, api.AgentWorkflowID(api.DefaultTaskQueue, "", cluster), "", api.QueryStatus)
	if err != nil {
		return st, err
	}
	return st, v.Get(&st)
}

// WaitAgentStatus polls AgentStatus until cond holds, failing the test with the last status after timeout.
func (s *Stack) WaitAgentStatus(cluster string, timeout time.Duration, what string, cond func(api.AgentStatus) bool) api.AgentStatus {
	s.t.Helper()
	var st api.AgentStatus
	var err error
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if st, err = s.AgentStatus(cluster); err == nil && cond(st) {
			return st
		}
		time.Sleep(100 * time.Millisecond)
	}
	s.t.Fatalf("agent of %s: %s: not within %s; last status %+v, error %v", cluster, what, timeout, st, err)
	return st
}

// RestartTemporal stops the Temporal dev server and starts it again on the same ports and database, so
// every workflow goes on where it was.
func (s *Stack) RestartTemporal() {
	s.t.Helper()
	require.NotNil(s.t, s.Temporal, "restarting Temporal takes a server of the stack's own: harness.Options.OwnTemporal")
	ctx, cancel := context.WithTimeout(context.Background(), Patience(3*time.Minute))
	defer cancel()
	require.NoError(s.t, s.Temporal.Restart(ctx))
}
