package kubeconfigsecret

import (
	"context"
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
	c := fake.NewClientset(secret("team-a", "edge", map[string][]byte{"value": []byte("first")}))
	s := NewFor(c, 10*time.Second)
	now := time.Unix(1000, 0)
	s.now = func() time.Time { return now }
	ctx := context.Background()

	got, err := s.Get(ctx, "team-a", "edge")
	require.NoError(t, err)
	require.Equal(t, "first", string(got))

	_, err = c.CoreV1().Secrets("team-a").Update(ctx, secret("team-a", "edge", map[string][]byte{"value": []byte("rotated")}), metav1.UpdateOptions{})
	require.NoError(t, err)
	got, _ = s.Get(ctx, "team-a", "edge")
	require.Equal(t, "first", string(got), "within the TTL the copy is used")
	now = now.Add(11 * time.Second)
	got, _ = s.Get(ctx, "team-a", "edge")
	require.Equal(t, "rotated", string(got))
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
