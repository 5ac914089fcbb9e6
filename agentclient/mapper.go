package agentclient

import (
	"crypto/sha256"
	"encoding/binary"
	"hash"
	"runtime"
	"sync"
	"weak"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/restmapper"
)

// mapperTable shares REST mappers between clusters whose discovery says the same thing. A fleet is
// mostly clusters of one Kubernetes version with the same CRDs, and the mapper built from discovery
// is the largest thing a worker holds per cluster (about 0.18 MB for a plain cluster's hundred kinds,
// against 0.05 MB for the discovery documents themselves): one per distinct discovery instead of one
// per cluster is what keeps a worker near 1 MB per managed cluster. A mapper is immutable once built,
// so sharing it is safe; entries are weak, so a mapper no cluster uses any more (its CRDs changed, its
// clients were rebuilt) is collected.
type mapperTable struct {
	mu sync.Mutex
	m  map[[sha256.Size]byte]weak.Pointer[builtMapper]
}

// builtMapper is one immutable mapper built from discovery.
type builtMapper struct{ meta.RESTMapper }

func newMapperTable() *mapperTable {
	return &mapperTable{m: map[[sha256.Size]byte]weak.Pointer[builtMapper]{}}
}

// get returns the table's mapper for groups, building it when no cluster with the same discovery holds one.
func (t *mapperTable) get(groups []*restmapper.APIGroupResources) *builtMapper {
	key := fingerprint(groups)
	t.mu.Lock()
	defer t.mu.Unlock()
	if b := t.m[key].Value(); b != nil {
		return b
	}
	b := &builtMapper{restmapper.NewDiscoveryRESTMapper(groups)}
	wp := weak.Make(b)
	t.m[key] = wp
	runtime.AddCleanup(b, func(key [sha256.Size]byte) {
		t.mu.Lock()
		defer t.mu.Unlock()
		if t.m[key] == wp {
			delete(t.m, key)
		}
	}, key)
	return b
}

// fingerprint hashes exactly what restmapper.NewDiscoveryRESTMapper reads, in the order it reads it
// (order is priority), so two discoveries with one fingerprint build the same mapper. Fields the mapper
// ignores, such as the server addresses in the core group, stay out: they differ between clusters.
func fingerprint(groups []*restmapper.APIGroupResources) [sha256.Size]byte {
	h := sha256.New()
	for _, g := range groups {
		writeStrings(h, "group", g.Group.Name, g.Group.PreferredVersion.Version)
		for _, v := range g.Group.Versions {
			resources, ok := g.VersionedResources[v.Version]
			if !ok {
				continue
			}
			writeStrings(h, "version", v.Version)
			for _, r := range resources {
				namespaced := "cluster"
				if r.Namespaced {
					namespaced = "namespaced"
				}
				writeStrings(h, "resource", r.Name, r.SingularName, r.Kind, namespaced)
			}
		}
	}
	var key [sha256.Size]byte
	h.Sum(key[:0])
	return key
}

// writeStrings writes each string with its length first, so that no two sequences hash alike.
func writeStrings(h hash.Hash, ss ...string) {
	var n [8]byte
	for _, s := range ss {
		binary.BigEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
}

// clusterMapper is one cluster's REST mapper. It behaves as restmapper.DeferredDiscoveryRESTMapper
// does (built from the cluster's cached discovery on first use, rebuilt after Reset, one retry after a
// miss while discovery is stale), but the mapper it builds comes from the shared table.
type clusterMapper struct {
	discovery discovery.CachedDiscoveryInterface
	table     *mapperTable

	mu       sync.Mutex
	delegate *builtMapper
}

var _ meta.ResettableRESTMapper = (*clusterMapper)(nil)

func newClusterMapper(d discovery.CachedDiscoveryInterface, t *mapperTable) *clusterMapper {
	return &clusterMapper{discovery: d, table: t}
}

func (m *clusterMapper) current() (meta.RESTMapper, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.delegate != nil {
		return m.delegate, nil
	}
	groups, err := restmapper.GetAPIGroupResources(m.discovery)
	if err != nil {
		return nil, err
	}
	m.delegate = m.table.get(groups)
	return m.delegate, nil
}

// Reset drops the cached discovery and the mapper; the next lookup discovers again.
func (m *clusterMapper) Reset() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.discovery.Invalidate()
	m.delegate = nil
}

// forget drops the mapper but not the discovery it was built from, which its caller has just dropped:
// the next lookup builds the mapper from what discovery says then. Without it a mapper built before a
// CRD was created would outlive every refresh of discovery (fresh again before the lookup that misses, so
// that miss is never retried), and a bundle whose objects are of that kind would fail until the worker
// restarts.
func (m *clusterMapper) forget() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.delegate = nil
}

// lookup runs f on the current mapper and, when it misses while discovery is stale, once more after a
// Reset: the DeferredDiscoveryRESTMapper's rule for a kind created since discovery was cached.
func lookup[T any](m *clusterMapper, f func(meta.RESTMapper) (T, error), missed func(T, error) bool) (T, error) {
	d, err := m.current()
	if err != nil {
		var zero T
		return zero, err
	}
	v, err := f(d)
	if missed(v, err) && !m.discovery.Fresh() {
		m.Reset()
		if d, err = m.current(); err != nil {
			var zero T
			return zero, err
		}
		v, err = f(d)
	}
	return v, err
}

func failed[T any](_ T, err error) bool { return err != nil }

func empty[T any](v []T, _ error) bool { return len(v) == 0 }

func (m *clusterMapper) KindFor(r schema.GroupVersionResource) (schema.GroupVersionKind, error) {
	return lookup(m, func(d meta.RESTMapper) (schema.GroupVersionKind, error) { return d.KindFor(r) }, failed)
}

func (m *clusterMapper) KindsFor(r schema.GroupVersionResource) ([]schema.GroupVersionKind, error) {
	return lookup(m, func(d meta.RESTMapper) ([]schema.GroupVersionKind, error) { return d.KindsFor(r) }, empty)
}

func (m *clusterMapper) ResourceFor(r schema.GroupVersionResource) (schema.GroupVersionResource, error) {
	return lookup(m, func(d meta.RESTMapper) (schema.GroupVersionResource, error) { return d.ResourceFor(r) }, failed)
}

func (m *clusterMapper) ResourcesFor(r schema.GroupVersionResource) ([]schema.GroupVersionResource, error) {
	return lookup(m, func(d meta.RESTMapper) ([]schema.GroupVersionResource, error) { return d.ResourcesFor(r) }, empty)
}

func (m *clusterMapper) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	return lookup(m, func(d meta.RESTMapper) (*meta.RESTMapping, error) { return d.RESTMapping(gk, versions...) }, failed)
}

func (m *clusterMapper) RESTMappings(gk schema.GroupKind, versions ...string) ([]*meta.RESTMapping, error) {
	return lookup(m, func(d meta.RESTMapper) ([]*meta.RESTMapping, error) { return d.RESTMappings(gk, versions...) }, empty)
}

func (m *clusterMapper) ResourceSingularizer(resource string) (string, error) {
	return lookup(m, func(d meta.RESTMapper) (string, error) { return d.ResourceSingularizer(resource) }, failed)
}
