package chartcheck

import (
	"fmt"
	"net/http"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/releaseutil"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/yaml"

	"github.com/flotilla-gitops/flotilla/agentclient"
)

// clusterGetter is the child's handle to the cluster the release goes to: the worker's own kubeconfig,
// so `lookup` finds what it will find during the install, confined to the namespace agentclient
// confines the install's lookups to.
type clusterGetter struct {
	config  *rest.Config
	confine string
}

var _ action.RESTClientGetter = (*clusterGetter)(nil)

func newClusterGetter(a clusterAccess) (*clusterGetter, error) {
	overrides := &clientcmd.ConfigOverrides{CurrentContext: a.Context}
	var cfg *rest.Config
	var err error
	if len(a.KubeconfigData) > 0 {
		var raw *clientcmdapi.Config
		if raw, err = clientcmd.Load(a.KubeconfigData); err == nil {
			cfg, err = clientcmd.NewNonInteractiveClientConfig(*raw, a.Context, overrides, nil).ClientConfig()
		}
	} else {
		rules := &clientcmd.ClientConfigLoadingRules{ExplicitPath: a.Kubeconfig}
		cfg, err = clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides).ClientConfig()
	}
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", a.Kubeconfig, err)
	}
	cfg.QPS, cfg.Burst = agentclient.DefaultQPS, agentclient.DefaultBurst
	cfg.UserAgent = "flotilla-chartcheck"
	return &clusterGetter{config: cfg, confine: a.Confine}, nil
}

// ToRESTConfig is what Helm's engine builds its lookup client from.
func (g *clusterGetter) ToRESTConfig() (*rest.Config, error) {
	cfg := rest.CopyConfig(g.config)
	if g.confine != "" {
		cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return agentclient.LookupsConfinedTo(rt, g.confine) })
	}
	return cfg, nil
}

func (g *clusterGetter) ToDiscoveryClient() (discovery.CachedDiscoveryInterface, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(g.config)
	if err != nil {
		return nil, err
	}
	return memory.NewMemCacheClient(dc), nil
}

func (g *clusterGetter) ToRESTMapper() (meta.RESTMapper, error) {
	dc, err := g.ToDiscoveryClient()
	if err != nil {
		return nil, err
	}
	return restmapper.NewDeferredDiscoveryRESTMapper(dc), nil
}

// capabilities are what Helm's install or upgrade reads from discovery (action.Configuration's
// getCapabilities). An install first creates the CRDs of the chart's crds/ folder, so their API versions
// are there when its templates render; they are added here, where nothing is created.
func (g *clusterGetter) capabilities(c *chart.Chart, install bool) (*chartutil.Capabilities, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(g.config)
	if err != nil {
		return nil, err
	}
	kv, err := dc.ServerVersion()
	if err != nil {
		return nil, fmt.Errorf("could not get server version from Kubernetes: %w", err)
	}
	versions, err := action.GetVersionSet(dc)
	if err != nil {
		return nil, err
	}
	if install {
		versions = append(versions, crdVersions(c)...)
	}
	return &chartutil.Capabilities{
		APIVersions: versions,
		KubeVersion: chartutil.KubeVersion{Version: kv.GitVersion, Major: kv.Major, Minor: kv.Minor},
		HelmVersion: chartutil.DefaultCapabilities.HelmVersion,
	}, nil
}

// crdVersions are the group/version and group/version/kind entries discovery lists once the chart's CRDs
// (its own and its subcharts') exist.
func crdVersions(c *chart.Chart) []string {
	var out []string
	for _, crd := range c.CRDObjects() {
		for _, doc := range releaseutil.SplitManifests(string(crd.File.Data)) {
			var o struct {
				Kind string `json:"kind"`
				Spec struct {
					Group string `json:"group"`
					Names struct {
						Kind string `json:"kind"`
					} `json:"names"`
					Versions []struct {
						Name   string `json:"name"`
						Served bool   `json:"served"`
					} `json:"versions"`
				} `json:"spec"`
			}
			if yaml.Unmarshal([]byte(doc), &o) != nil || o.Kind != "CustomResourceDefinition" {
				continue
			}
			for _, v := range o.Spec.Versions {
				if v.Served {
					gv := o.Spec.Group + "/" + v.Name
					out = append(out, gv, gv+"/"+o.Spec.Names.Kind)
				}
			}
		}
	}
	return out
}
