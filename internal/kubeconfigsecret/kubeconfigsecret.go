// Package kubeconfigsecret reads clusters' kubeconfigs from Secrets of a management cluster, as Fleet's
// Cluster.spec.kubeConfigSecret names them (key `value`). The content stays in the worker's memory: only the
// Secret's name is in Temporal, and no message carries what the Secret holds.
package kubeconfigsecret

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/flotilla-gitops/flotilla/fleet"
)

// Key is the Secret's key that holds the kubeconfig, as in Fleet.
const Key = "value"

// InCluster, given as the management kubeconfig, means the worker's own service account in the cluster it
// runs in.
const InCluster = "in-cluster"

// DefaultTTL bounds how long a rotated kubeconfig takes to reach the worker, and how often a cluster's
// checks read its Secret.
const DefaultTTL = 10 * time.Second

// Source reads kubeconfig Secrets, caching each for TTL. A nil *Source answers every Get with an error
// saying how to give the worker the management cluster.
type Source struct {
	client kubernetes.Interface
	ttl    time.Duration
	now    func() time.Time

	mu    sync.Mutex
	cache map[string]entry
}

type entry struct {
	data []byte
	at   time.Time
}

// New is a Source on the management cluster kubeconfig reaches (InCluster: the worker's own).
func New(kubeconfig string) (*Source, error) {
	var cfg *rest.Config
	var err error
	if kubeconfig == InCluster {
		cfg, err = rest.InClusterConfig()
	} else {
		cfg, err = clientcmd.BuildConfigFromFlags("", kubeconfig)
	}
	if err != nil {
		return nil, fmt.Errorf("management cluster kubeconfig %s: %w", kubeconfig, err)
	}
	cfg.UserAgent = "flotilla-worker"
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("management cluster kubeconfig %s: %w", kubeconfig, err)
	}
	return NewFor(c, DefaultTTL), nil
}

// NewFor is a Source reading through c.
func NewFor(c kubernetes.Interface, ttl time.Duration) *Source {
	return &Source{client: c, ttl: ttl, now: time.Now, cache: map[string]entry{}}
}

// ForCluster is the kubeconfig of a cluster registered with spec.kubeConfigSecret, read in the cluster's own
// namespace (inventory.ValidateCluster refuses any other), and how messages name where it came from.
func (s *Source) ForCluster(ctx context.Context, c fleet.Cluster) (source string, kubeconfig []byte, err error) {
	ns := fleet.Workspace(c.Metadata.Namespace)
	kubeconfig, err = s.Get(ctx, ns, c.Spec.KubeConfigSecret)
	return "secret " + ns + "/" + c.Spec.KubeConfigSecret, kubeconfig, err
}

// Get is the kubeconfig in Secret namespace/name, key `value`.
func (s *Source) Get(ctx context.Context, namespace, name string) ([]byte, error) {
	ref := namespace + "/" + name
	if s == nil {
		return nil, fmt.Errorf("kubeconfig Secret %s: this worker has no management cluster to read it from "+
			"(start it with --management-kubeconfig PATH, or %s inside that cluster)", ref, InCluster)
	}
	s.mu.Lock()
	e, ok := s.cache[ref]
	s.mu.Unlock()
	if ok && s.now().Sub(e.at) < s.ttl {
		return e.data, nil
	}
	sec, err := s.client.CoreV1().Secrets(namespace).Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil, fmt.Errorf("kubeconfig Secret %s: not found in the management cluster", ref)
	case err != nil:
		return nil, fmt.Errorf("kubeconfig Secret %s: %w", ref, err)
	}
	data := sec.Data[Key]
	if len(data) == 0 {
		return nil, fmt.Errorf("kubeconfig Secret %s: has no key %q (Fleet's key for the kubeconfig)", ref, Key)
	}
	if err := selfContained(data); err != nil {
		return nil, fmt.Errorf("kubeconfig Secret %s: %w", ref, err)
	}
	s.mu.Lock()
	s.cache[ref] = entry{data: data, at: s.now()}
	s.mu.Unlock()
	return data, nil
}

// selfContained refuses a kubeconfig that would make the worker read its own files or run a program:
// whoever may write the Secret would otherwise send the worker's files (its service account token, say)
// to a server of their choosing. Fleet's kubeconfig Secrets inline their certificates and tokens.
func selfContained(data []byte) error {
	cfg, err := clientcmd.Load(data)
	if err != nil {
		// The parser's message may quote the content: say only what it is not.
		return errors.New("key \"value\" is not a kubeconfig")
	}
	var refused []string
	for name, c := range cfg.Clusters {
		if c.CertificateAuthority != "" {
			refused = append(refused, fmt.Sprintf("clusters[%s].certificate-authority (use certificate-authority-data)", name))
		}
	}
	for name, a := range cfg.AuthInfos {
		for _, f := range []struct {
			field, use string
			set        bool
		}{
			{"client-certificate", "client-certificate-data", a.ClientCertificate != ""},
			{"client-key", "client-key-data", a.ClientKey != ""},
			{"tokenFile", "token", a.TokenFile != ""},
			{"exec", "a token or a client certificate", a.Exec != nil},
			{"auth-provider", "a token or a client certificate", a.AuthProvider != nil},
		} {
			if f.set {
				refused = append(refused, fmt.Sprintf("users[%s].%s (use %s)", name, f.field, f.use))
			}
		}
	}
	if len(refused) == 0 {
		return nil
	}
	sort.Strings(refused)
	return fmt.Errorf("names files or programs on the worker's host, which a kubeconfig from a Secret may not: %v", refused)
}
