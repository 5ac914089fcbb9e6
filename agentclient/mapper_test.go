package agentclient

import (
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
)

// fakeDiscovery serves a fixed list of groups and resources, in order, as a real API server does, and
// counts how often it was asked.
type fakeDiscovery struct {
	discovery.DiscoveryInterface // nil: only what the mapper calls is implemented

	mu        sync.Mutex
	groups    []*metav1.APIGroup
	resources []*metav1.APIResourceList
	fresh     bool
	fetches   int
}

func (f *fakeDiscovery) ServerGroupsAndResources() ([]*metav1.APIGroup, []*metav1.APIResourceList, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fetches++
	f.fresh = true
	return f.groups, f.resources, nil
}

func (f *fakeDiscovery) Fresh() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.fresh
}

func (f *fakeDiscovery) Invalidate() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fresh = false
}

// add serves one more group version, as an API server does once a CRD is established.
func (f *fakeDiscovery) add(gv schema.GroupVersion, resources ...metav1.APIResource) {
	f.mu.Lock()
	defer f.mu.Unlock()
	version := metav1.GroupVersionForDiscovery{GroupVersion: gv.String(), Version: gv.Version}
	f.groups = append(f.groups, &metav1.APIGroup{Name: gv.Group, Versions: []metav1.GroupVersionForDiscovery{version}, PreferredVersion: version})
	f.resources = append(f.resources, &metav1.APIResourceList{GroupVersion: gv.String(), APIResources: resources})
}

// plainCluster is discovery as a cluster without CRDs serves it; serverAddress differs per cluster.
func plainCluster(serverAddress string) *fakeDiscovery {
	f := &fakeDiscovery{}
	f.add(schema.GroupVersion{Version: "v1"},
		metav1.APIResource{Name: "configmaps", SingularName: "configmap", Kind: "ConfigMap", Namespaced: true},
		metav1.APIResource{Name: "namespaces", SingularName: "namespace", Kind: "Namespace"})
	f.add(schema.GroupVersion{Group: "apps", Version: "v1"},
		metav1.APIResource{Name: "deployments", SingularName: "deployment", Kind: "Deployment", Namespaced: true},
		metav1.APIResource{Name: "deployments/status", Kind: "Deployment", Namespaced: true})
	f.groups[0].ServerAddressByClientCIDRs = []metav1.ServerAddressByClientCIDR{{ClientCIDR: "0.0.0.0/0", ServerAddress: serverAddress}}
	return f
}

var widgetGVK = schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}

func widgets(namespaced bool) metav1.APIResource {
	return metav1.APIResource{Name: "widgets", SingularName: "widget", Kind: "Widget", Namespaced: namespaced}
}

func TestClustersWithTheSameDiscoveryShareOneMapper(t *testing.T) {
	table := newMapperTable()
	east := newClusterMapper(plainCluster("10.0.0.1:6443"), table)
	west := newClusterMapper(plainCluster("10.0.0.2:6443"), table)

	m, err := east.RESTMapping(schema.GroupKind{Group: "apps", Kind: "Deployment"}, "v1")
	require.NoError(t, err)
	require.Equal(t, "deployments", m.Resource.Resource)
	require.Equal(t, meta.RESTScopeNameNamespace, m.Scope.Name())
	m, err = west.RESTMapping(schema.GroupKind{Kind: "Namespace"}, "v1")
	require.NoError(t, err)
	require.Equal(t, meta.RESTScopeNameRoot, m.Scope.Name())

	require.Same(t, east.delegate, west.delegate, "server addresses differ, the kinds do not: one mapper")
	require.Len(t, table.m, 1)
}

func TestAClusterWithOtherKindsGetsItsOwnMapper(t *testing.T) {
	table := newMapperTable()
	plain := newClusterMapper(plainCluster("10.0.0.1:6443"), table)
	withCRD := plainCluster("10.0.0.2:6443")
	withCRD.add(widgetGVK.GroupVersion(), widgets(true))
	custom := newClusterMapper(withCRD, table)

	_, err := plain.RESTMapping(widgetGVK.GroupKind(), widgetGVK.Version)
	require.True(t, meta.IsNoMatchError(err), "the plain cluster has no widgets: %v", err)
	m, err := custom.RESTMapping(widgetGVK.GroupKind(), widgetGVK.Version)
	require.NoError(t, err)
	require.Equal(t, "widgets", m.Resource.Resource)
	require.NotSame(t, plain.delegate, custom.delegate)

	// The same kind with another scope is another mapping, so another mapper.
	clusterScoped := plainCluster("10.0.0.3:6443")
	clusterScoped.add(widgetGVK.GroupVersion(), widgets(false))
	other := newClusterMapper(clusterScoped, table)
	m, err = other.RESTMapping(widgetGVK.GroupKind(), widgetGVK.Version)
	require.NoError(t, err)
	require.Equal(t, meta.RESTScopeNameRoot, m.Scope.Name())
	require.NotSame(t, custom.delegate, other.delegate)
}

func TestAKindCreatedAfterDiscoveryIsFoundOnceDiscoveryIsStale(t *testing.T) {
	table := newMapperTable()
	d := plainCluster("10.0.0.1:6443")
	m := newClusterMapper(d, table)
	_, err := m.RESTMapping(widgetGVK.GroupKind(), widgetGVK.Version)
	require.True(t, meta.IsNoMatchError(err))
	require.Equal(t, 1, d.fetches, "fresh discovery that lacks a kind is not fetched again")

	// A CRD is installed and Helm drops the discovery cache.
	d.add(widgetGVK.GroupVersion(), widgets(true))
	d.Invalidate()
	mapping, err := m.RESTMapping(widgetGVK.GroupKind(), widgetGVK.Version)
	require.NoError(t, err)
	require.Equal(t, "widgets", mapping.Resource.Resource)
	require.Equal(t, 2, d.fetches)

	// Reset (Helm calls it after installing CRDs) rebuilds from discovery too.
	m.Reset()
	kinds, err := m.KindsFor(schema.GroupVersionResource{Group: "example.com", Resource: "widgets"})
	require.NoError(t, err)
	require.Equal(t, []schema.GroupVersionKind{widgetGVK}, kinds)
	require.Equal(t, 3, d.fetches)
}

// A CRD one bundle installed, then a bundle whose objects are of its kind (dependsOn): Helm drops the
// discovery cache when the second operation begins and reads discovery again before it maps the
// manifests, so the lookup that would miss finds discovery fresh. The mapper is dropped with the cache,
// and is rebuilt from what discovery says now.
func TestAKindCreatedAfterDiscoveryIsMappedByTheNextHelmOperation(t *testing.T) {
	d := plainCluster("10.0.0.1:6443")
	c := &Client{discovery: d, mapper: newClusterMapper(d, newMapperTable())}
	_, err := c.mapper.RESTMapping(schema.GroupKind{Group: "apps", Kind: "Deployment"}, "v1")
	require.NoError(t, err)

	d.add(widgetGVK.GroupVersion(), widgets(true))
	time.Sleep(time.Millisecond)
	op, err := namespacedGetter{c: c, namespace: "widgets", start: time.Now()}.ToDiscoveryClient()
	require.NoError(t, err)
	op.Invalidate()
	_, _, err = d.ServerGroupsAndResources()
	require.NoError(t, err)
	require.True(t, d.Fresh(), "discovery is fresh again when Helm maps the manifests")

	mapper, err := namespacedGetter{c: c}.ToRESTMapper()
	require.NoError(t, err)
	m, err := mapper.RESTMapping(widgetGVK.GroupKind(), widgetGVK.Version)
	require.NoError(t, err)
	require.Equal(t, "widgets", m.Resource.Resource)
}

func TestAMapperNoClusterUsesIsCollected(t *testing.T) {
	table := newMapperTable()
	func() {
		m := newClusterMapper(plainCluster("10.0.0.1:6443"), table)
		_, err := m.ResourceSingularizer("configmaps")
		require.NoError(t, err)
	}()
	require.Len(t, table.m, 1)
	require.Eventually(t, func() bool {
		runtime.GC()
		table.mu.Lock()
		defer table.mu.Unlock()
		return len(table.m) == 0
	}, 5*time.Second, 10*time.Millisecond)
}
