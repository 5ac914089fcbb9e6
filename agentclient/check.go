package agentclient

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/fluxcd/cli-utils/pkg/kstatus/status"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/releaseutil"
	"helm.sh/helm/v3/pkg/storage/driver"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/lru"
	"sigs.k8s.io/yaml"
)

// ObjectRef names one object of a release.
type ObjectRef struct{ APIVersion, Kind, Namespace, Name string }

func (r ObjectRef) String() string {
	if r.Namespace == "" {
		return fmt.Sprintf("%s %s", r.Kind, r.Name)
	}
	return fmt.Sprintf("%s %s/%s", r.Kind, r.Namespace, r.Name)
}

// ObjectStatus is the live truth about one object of a release.
type ObjectStatus struct {
	Ref     ObjectRef
	State   string // one of the State* constants
	Message string // short, e.g. "Deployment web: Available: 1/2"
}

// Object states reported by CheckRelease. When several apply, the first in this list wins.
const (
	StateMissing  = "missing"  // not in the cluster (or its kind is not served)
	StateModified = "modified" // a field the manifest sets has another live value
	StateNotReady = "notReady" // kstatus InProgress, Failed or Terminating
	StateUnknown  = "unknown"  // could not be read or evaluated
	StateOrphaned = "orphaned" // not desired any more, left over from the previous revision
	StateReady    = "ready"    // kstatus Current
)

// helmManagedSelector narrows the batched LISTs to objects Helm labelled; anything a LIST misses is
// still looked up with a GET, so a removed label cannot make an object look missing.
const helmManagedSelector = "app.kubernetes.io/managed-by=Helm"

// maxDriftPaths bounds the paths quoted in a "modified" message.
const maxDriftPaths = 3

type checkItem struct {
	ref     ObjectRef
	desired *unstructured.Unstructured
	live    *unstructured.Unstructured
	norm    normalizer
	result  *ObjectStatus // set early when the object cannot be evaluated
	orphan  bool          // in the previous revision only
}

type fetchGroup struct {
	resource  schema.GroupVersionResource
	namespace string
}

// CheckRelease reads the latest revision's manifest and reports every object's live state, and the
// objects of the previous revision that are no longer desired but still live as orphaned, sorted by
// kind, namespace and name. Objects of one resource type in one namespace are fetched with a single
// LIST when there are two or more of them. Readiness is kstatus's (Current ⇒ ready); drift detection
// compares only the fields the manifest sets (see driftPaths). Hooks are not part of the manifest and
// are not checked. An unreachable cluster fails the whole call; any other problem with one object
// makes that object "unknown". opts leave known differences, ignored objects and ignored conditions out.
func (c *Client) CheckRelease(ctx context.Context, namespace, name string, opts CheckOptions) ([]ObjectStatus, error) {
	hist, err := c.history(ctx, namespace, name)
	if err != nil {
		return nil, c.errorf(namespace, name, "check", err)
	}
	return c.checkObjects(ctx, namespace, name, hist, opts)
}

// history reads every revision with one LIST, oldest first; ErrReleaseNotFound when there is none.
func (c *Client) history(ctx context.Context, namespace, name string) ([]*release.Release, error) {
	hist, err := c.storage(ctx, namespace, c.helmLog(namespace, name)).History(name)
	if err == nil && len(hist) == 0 || errors.Is(err, driver.ErrReleaseNotFound) {
		return nil, ErrReleaseNotFound
	}
	releaseutil.SortByRevision(hist)
	return hist, err
}

// Inspect is Observe and, when the latest revision is deployed, CheckRelease, from a single read of the
// release's history: an idle check costs one LIST of Secrets plus the reads of the objects.
func (c *Client) Inspect(ctx context.Context, namespace, name string, opts CheckOptions) (ReleaseState, []ObjectStatus, error) {
	// One LIST of the release's Secrets gives the latest revision and the one before it, whose objects
	// that are gone from the latest manifest but still live are orphans.
	hist, err := c.history(ctx, namespace, name)
	if errors.Is(err, ErrReleaseNotFound) {
		return ReleaseState{Name: name, Namespace: namespace}, nil, nil
	}
	if err != nil {
		return ReleaseState{}, nil, c.errorf(namespace, name, "observe", err)
	}
	rel := hist[len(hist)-1]
	state := stateOf(rel)
	if state.Status != "deployed" {
		return state, nil, nil
	}
	objs, err := c.checkObjects(ctx, namespace, name, hist, opts)
	return state, objs, err
}

func (c *Client) checkObjects(ctx context.Context, namespace, name string, hist []*release.Release, opts CheckOptions) ([]ObjectStatus, error) {
	rel := hist[len(hist)-1]
	objs, err := parsedManifests.objects(rel.Manifest)
	if err != nil {
		return nil, c.errorf(namespace, name, fmt.Sprintf("check: manifest of revision %d", rel.Version), err)
	}
	var previous []*unstructured.Unstructured
	if len(hist) > 1 {
		// A previous manifest that does not parse only means orphans cannot be named.
		previous, _ = parsedManifests.objects(hist[len(hist)-2].Manifest)
	}

	var items []*checkItem
	groups := map[fetchGroup][]*checkItem{}
	add := func(o *unstructured.Unstructured, orphan bool) (*checkItem, error) {
		it := &checkItem{desired: o, orphan: orphan, ref: ObjectRef{APIVersion: o.GetAPIVersion(), Kind: o.GetKind(), Name: o.GetName()}}
		mapping, err := c.restMapping(o.GroupVersionKind())
		switch {
		case meta.IsNoMatchError(err):
			it.ref.Namespace = o.GetNamespace()
			it.result = &ObjectStatus{State: StateMissing, Message: fmt.Sprintf("%s %s: kind %s is not served by the cluster", it.ref.Kind, it.ref.Name, o.GroupVersionKind())}
			return it, nil
		case IsUnreachable(err):
			return nil, err
		case err != nil:
			it.result = &ObjectStatus{State: StateUnknown, Message: fmt.Sprintf("%s %s: %v", it.ref.Kind, it.ref.Name, err)}
			return it, nil
		}
		if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
			it.ref.Namespace = o.GetNamespace()
			if it.ref.Namespace == "" {
				it.ref.Namespace = rel.Namespace
			}
		}
		g := fetchGroup{resource: mapping.Resource, namespace: it.ref.Namespace}
		groups[g] = append(groups[g], it)
		return it, nil
	}
	desired := map[ObjectRef]bool{}
	for _, o := range objs {
		it, err := add(o, false)
		if err != nil {
			return nil, c.errorf(namespace, name, "check", err)
		}
		items = append(items, it)
		desired[it.ref] = true
	}
	var orphans []*checkItem
	for _, o := range previous {
		ref := ObjectRef{APIVersion: o.GetAPIVersion(), Kind: o.GetKind(), Namespace: o.GetNamespace(), Name: o.GetName()}
		if ref.Namespace == "" && desired[ObjectRef{ref.APIVersion, ref.Kind, rel.Namespace, ref.Name}] || desired[ref] {
			continue
		}
		it, err := add(o, true)
		if err != nil {
			return nil, c.errorf(namespace, name, "check", err)
		}
		if it.result == nil && !desired[it.ref] {
			orphans = append(orphans, it)
		}
	}
	for g, its := range groups {
		if err := c.fetch(ctx, g, its); err != nil {
			return nil, c.errorf(namespace, name, "check", err)
		}
	}

	out := make([]ObjectStatus, 0, len(items)+len(orphans))
	seen := map[ObjectRef]bool{}
	for _, it := range items {
		if seen[it.ref] {
			continue // the same object twice in a manifest is one object in the cluster
		}
		seen[it.ref] = true
		it.norm = opts.forObject(it.ref)
		st := it.result
		if st == nil || it.norm.ignored && st.State == StateMissing {
			st = evaluate(it)
		}
		st.Ref = it.ref
		out = append(out, *st)
	}
	for _, it := range orphans {
		if seen[it.ref] || it.live == nil || opts.forObject(it.ref).ignored {
			continue
		}
		seen[it.ref] = true
		out = append(out, ObjectStatus{Ref: it.ref, State: StateOrphaned,
			Message: fmt.Sprintf("%s %s: left over from revision %d", it.ref.Kind, it.ref.Name, hist[len(hist)-2].Version)})
	}
	slices.SortFunc(out, func(a, b ObjectStatus) int {
		return strings.Compare(sortKey(a.Ref), sortKey(b.Ref))
	})
	return out, nil
}

func sortKey(r ObjectRef) string {
	return r.Kind + "\x00" + r.Namespace + "\x00" + r.Name + "\x00" + r.APIVersion
}

// restMapping resolves a kind, refreshing discovery once when the kind is unknown (a CRD installed after
// discovery was cached).
func (c *Client) restMapping(gvk schema.GroupVersionKind) (*meta.RESTMapping, error) {
	m, err := c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if meta.IsNoMatchError(err) {
		c.mapper.Reset()
		m, err = c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	}
	return m, err
}

// fetch fills items[i].live, or items[i].result when an object cannot be read. Only an unreachable
// cluster is returned as an error.
func (c *Client) fetch(ctx context.Context, g fetchGroup, items []*checkItem) error {
	var ri dynamic.ResourceInterface = c.dynamic.Resource(g.resource)
	if g.namespace != "" {
		ri = c.dynamic.Resource(g.resource).Namespace(g.namespace)
	}
	if len(items) >= 2 {
		byName, err := listByName(ctx, ri)
		if IsUnreachable(err) {
			return err
		}
		// Any other LIST failure (RBAC may allow get only) falls back to GETs.
		for _, it := range items {
			it.live = byName[it.ref.Name]
		}
	}
	for _, it := range items {
		if it.live != nil {
			continue
		}
		live, err := ri.Get(ctx, it.ref.Name, metav1.GetOptions{})
		switch {
		case err == nil:
			it.live = live
		case apierrors.IsNotFound(err):
		case IsUnreachable(err):
			return err
		default:
			it.result = &ObjectStatus{State: StateUnknown, Message: fmt.Sprintf("%s %s: %v", it.ref.Kind, it.ref.Name, err)}
		}
	}
	return nil
}

func listByName(ctx context.Context, ri dynamic.ResourceInterface) (map[string]*unstructured.Unstructured, error) {
	out := map[string]*unstructured.Unstructured{}
	opts := metav1.ListOptions{LabelSelector: helmManagedSelector, Limit: listPageSize}
	for {
		page, err := ri.List(ctx, opts)
		if err != nil {
			return nil, err
		}
		for i := range page.Items {
			out[page.Items[i].GetName()] = &page.Items[i]
		}
		if opts.Continue = page.GetContinue(); opts.Continue == "" {
			return out, nil
		}
	}
}

func evaluate(it *checkItem) *ObjectStatus {
	label := it.ref.Kind + " " + it.ref.Name
	if it.live == nil {
		if it.norm.ignored {
			return &ObjectStatus{State: StateReady, Message: label + ": absent, ignored by diff.comparePatches"}
		}
		return &ObjectStatus{State: StateMissing, Message: label + ": not found"}
	}
	// List items may come without apiVersion and kind; kstatus picks its rules by kind.
	it.live.SetAPIVersion(it.desired.GetAPIVersion())
	it.live.SetKind(it.desired.GetKind())
	desired, live := it.norm.forDiff(it.desired.Object, it.live.Object)
	if paths := driftPaths(desired, live); len(paths) > 0 && !it.norm.ignored {
		msg := label + ": modified: " + strings.Join(paths[:min(len(paths), maxDriftPaths)], ", ")
		if n := len(paths) - maxDriftPaths; n > 0 {
			msg += fmt.Sprintf(" (+%d more)", n)
		}
		return &ObjectStatus{State: StateModified, Message: msg}
	}
	res, err := status.Compute(it.norm.forReadiness(it.live))
	if err != nil {
		return &ObjectStatus{State: StateUnknown, Message: fmt.Sprintf("%s: %v", label, err)}
	}
	st := &ObjectStatus{Message: label + ": " + res.Message}
	switch res.Status {
	case status.CurrentStatus:
		st.State = StateReady
	case status.InProgressStatus, status.FailedStatus, status.TerminatingStatus:
		st.State = StateNotReady
	case status.NotFoundStatus:
		st.State = StateMissing
	default:
		st.State = StateUnknown
	}
	return st
}

// manifestCache keeps parsed release manifests. A revision's manifest never changes, and every check of
// an idle release parses the same text again: splitting and decoding it was the largest share of the
// worker's CPU in the fan-out benchmark (docs/performance.md). The objects are shared, so callers treat
// them as read-only.
type manifestCache struct{ lru *lru.Cache }

// manifestCacheSize covers a check interval's worth of distinct manifests for about a thousand releases.
// An entry is the parsed objects of one revision, somewhat larger than the manifest's text: about 110 KB
// for the benchmark's bundle of ten 10 KB ConfigMaps (111 MB for 1,000 entries in a heap profile).
const manifestCacheSize = 1024

var parsedManifests = manifestCache{lru: lru.New(manifestCacheSize)}

func (c manifestCache) objects(manifest string) ([]*unstructured.Unstructured, error) {
	key := sha256.Sum256([]byte(manifest))
	if v, ok := c.lru.Get(key); ok {
		return v.([]*unstructured.Unstructured), nil
	}
	objs, err := manifestObjects(manifest)
	if err == nil {
		c.lru.Add(key, objs)
	}
	return objs, err
}

// manifestObjects parses a release manifest into objects; List kinds are expanded into their items.
func manifestObjects(manifest string) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	for i, doc := range splitManifest(manifest) {
		js, err := yaml.YAMLToJSON([]byte(doc))
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", i+1, err)
		}
		if s := strings.TrimSpace(string(js)); s == "null" || s == "{}" {
			continue
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(js); err != nil {
			return nil, fmt.Errorf("document %d: %w", i+1, err)
		}
		if u.IsList() {
			list, err := u.ToList()
			if err != nil {
				return nil, fmt.Errorf("document %d: %w", i+1, err)
			}
			for j := range list.Items {
				out = append(out, &list.Items[j])
			}
			continue
		}
		out = append(out, u)
	}
	return out, nil
}
