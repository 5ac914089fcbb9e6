package agentclient

import (
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
}

var _ genericclioptions.RESTClientGetter = namespacedGetter{}

func (g namespacedGetter) ToRESTConfig() (*rest.Config, error) {
	return copyRESTConfig(g.c.restConfig), nil
}

func (g namespacedGetter) ToDiscoveryClient() (discovery.CachedDiscoveryInterface, error) {
	return g.c.discovery, nil
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
