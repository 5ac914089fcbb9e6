package agentclient

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/kube"
	"helm.sh/helm/v3/pkg/storage"
	"helm.sh/helm/v3/pkg/storage/driver"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Client is the handle to one cluster. Get it from a Pool; it is safe for concurrent use.
type Client struct {
	name       string // kubeconfig context, used in logs and errors
	log        *zap.Logger
	kubeconfig string
	raw        *clientcmdapi.Config
	restConfig *rest.Config
	discovery  discovery.CachedDiscoveryInterface
	mapper     *clusterMapper
	clientset  kubernetes.Interface
	dynamic    dynamic.Interface
	metadata   metadata.Interface
	locks      *releaseLocks
	// fieldValidation remembers whether the server validates fields itself (see validation.go).
	fieldValidation fieldValidation
	// invalidated is when Helm last dropped the cached discovery (UnixNano; see operationDiscovery).
	invalidated atomic.Int64
}

// Name is the kubeconfig context the Client talks to.
func (c *Client) Name() string { return c.name }

// Ping checks that the apiserver answers: GET /readyz, falling back to /version where /readyz is not
// allowed, within a few seconds whatever ctx allows.
func (c *Client) Ping(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, pingTimeout)
	defer cancel()
	rc := c.clientset.Discovery().RESTClient()
	err := rc.Get().AbsPath("/readyz").Do(ctx).Error()
	if apierrors.IsForbidden(err) || apierrors.IsNotFound(err) || apierrors.IsUnauthorized(err) {
		err = rc.Get().AbsPath("/version").Do(ctx).Error()
	}
	if err != nil {
		return fmt.Errorf("cluster %s: ping: %w", c.name, err)
	}
	return nil
}

// releaseLocks serialises operations per release. A channel rather than a sync.Mutex so that waiting
// honours ctx.
type releaseLocks struct {
	mu sync.Mutex
	m  map[types.NamespacedName]chan struct{}
}

func newReleaseLocks() *releaseLocks {
	return &releaseLocks{m: map[types.NamespacedName]chan struct{}{}}
}

func (l *releaseLocks) lock(ctx context.Context, key types.NamespacedName) (unlock func(), err error) {
	l.mu.Lock()
	ch, ok := l.m[key]
	if !ok {
		ch = make(chan struct{}, 1)
		l.m[key] = ch
	}
	l.mu.Unlock()
	select {
	case ch <- struct{}{}:
		return func() { <-ch }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// exclusive runs op with the release lock held. op runs to completion even when ctx ends first: the
// caller gets ctx's error at once, while the lock is released only when op has really finished.
func exclusive[T any](ctx context.Context, c *Client, namespace, name, what string, op func() (T, error)) (T, error) {
	var zero T
	unlock, err := c.locks.lock(ctx, types.NamespacedName{Namespace: namespace, Name: name})
	if err != nil {
		return zero, c.errorf(namespace, name, what, fmt.Errorf("waiting for another operation on this release in this process: %w", err))
	}
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1)
	go func() {
		defer unlock()
		v, err := op()
		done <- result{v, err}
	}()
	select {
	case r := <-done:
		return r.v, r.err
	case <-ctx.Done():
		c.log.Warn("release operation continues after cancellation",
			zap.String("namespace", namespace), zap.String("release", name), zap.String("operation", what))
		return zero, c.errorf(namespace, name, what, fmt.Errorf("%w (Helm finishes the operation in the background; the release stays locked in this process until then)", ctx.Err()))
	}
}

func (c *Client) errorf(namespace, name, what string, err error) error {
	return fmt.Errorf("cluster %s: release %s/%s: %s: %w", c.name, namespace, name, what, err)
}

// actionConfig builds a Helm action configuration for one namespace. It is cheap: everything expensive
// is shared through the Client. A fresh one per call keeps Helm's mutable fields (MaxHistory,
// Capabilities) from leaking between concurrent operations.
func (c *Client) actionConfig(ctx context.Context, namespace, name string) (*action.Configuration, error) {
	logf := c.helmLog(namespace, name)
	cfg := new(action.Configuration)
	if err := cfg.Init(namespacedGetter{c: c, namespace: namespace, start: time.Now()}, namespace, "secret", logf); err != nil {
		return nil, err
	}
	if kc, ok := cfg.KubeClient.(*kube.Client); ok {
		kc.Namespace = namespace
	}
	cfg.Releases = c.storage(ctx, namespace, logf)
	return cfg, nil
}

// storage is Helm's Secret storage through the shared clientset, with ctx applied to every request
// (Helm's driver itself uses context.Background()).
func (c *Client) storage(ctx context.Context, namespace string, logf func(string, ...any)) *storage.Storage {
	d := driver.NewSecrets(ctxSecrets{SecretInterface: c.clientset.CoreV1().Secrets(namespace), ctx: ctx})
	s := storage.Init(d)
	if logf != nil {
		d.Log, s.Log = logf, logf
	}
	return s
}

// helmLog sends Helm's printf-style log to zap at debug level.
func (c *Client) helmLog(namespace, name string) func(string, ...any) {
	log := c.log.With(zap.String("namespace", namespace), zap.String("release", name))
	return func(format string, args ...any) {
		if log.Core().Enabled(zap.DebugLevel) {
			log.Debug("helm", zap.String("detail", fmt.Sprintf(format, args...)))
		}
	}
}

// ctxSecrets replaces the context.Background() Helm's Secret driver passes with the caller's ctx.
type ctxSecrets struct {
	typedcorev1.SecretInterface
	ctx context.Context
}

func (s ctxSecrets) Get(_ context.Context, name string, o metav1.GetOptions) (*corev1.Secret, error) {
	return s.SecretInterface.Get(s.ctx, name, o)
}

func (s ctxSecrets) List(_ context.Context, o metav1.ListOptions) (*corev1.SecretList, error) {
	return s.SecretInterface.List(s.ctx, o)
}

func (s ctxSecrets) Create(_ context.Context, sec *corev1.Secret, o metav1.CreateOptions) (*corev1.Secret, error) {
	return s.SecretInterface.Create(s.ctx, sec, o)
}

func (s ctxSecrets) Update(_ context.Context, sec *corev1.Secret, o metav1.UpdateOptions) (*corev1.Secret, error) {
	return s.SecretInterface.Update(s.ctx, sec, o)
}

func (s ctxSecrets) Delete(_ context.Context, name string, o metav1.DeleteOptions) error {
	return s.SecretInterface.Delete(s.ctx, name, o)
}
