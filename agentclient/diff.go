package agentclient

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/release"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// DryRun is the Install (upgrade false) or Upgrade r would make, run as Helm's server-side dry run: the
// chart rendered with the cluster's capabilities and lookups, Flotilla's post-renderer applied, the
// manifest validated and checked for objects another release owns. Nothing is written. It returns the
// manifest the operation would apply.
func (c *Client) DryRun(ctx context.Context, r ApplyRequest, upgrade bool) (string, error) {
	what := "dry-run install"
	if upgrade {
		what = "dry-run upgrade"
	}
	if err := r.check(); err != nil {
		return "", c.errorf(r.Namespace, r.Name, what, err)
	}
	cfg, err := c.actionConfig(ctx, r.Namespace, r.Name)
	if err != nil {
		return "", c.errorf(r.Namespace, r.Name, what, err)
	}
	c.serverSideValidation(ctx, cfg)
	if err := confine(cfg, r.ConfineToNamespace); err != nil {
		return "", c.errorf(r.Namespace, r.Name, what, err)
	}
	var rel *release.Release
	if upgrade {
		up := action.NewUpgrade(cfg)
		up.Namespace, up.ResetValues, up.PostRenderer = r.Namespace, true, r.PostRenderer
		up.TakeOwnership = r.TakeOwnership
		up.DryRun, up.DryRunOption = true, "server"
		rel, err = up.RunWithContext(ctx, r.Name, r.Chart, r.values())
	} else {
		in := action.NewInstall(cfg)
		in.ReleaseName, in.Namespace, in.PostRenderer = r.Name, r.Namespace, r.PostRenderer
		in.TakeOwnership = r.TakeOwnership
		in.DryRun, in.DryRunOption = true, "server"
		rel, err = in.RunWithContext(ctx, r.Chart, r.values())
	}
	if err != nil {
		return "", c.errorf(r.Namespace, r.Name, what, err)
	}
	return rel.Manifest, nil
}

// ObjectChange is one object an apply would create, update or delete.
type ObjectChange struct {
	Ref    ObjectRef
	Change string // "create", "update" or "delete"
	Fields []FieldChange
}

// Object changes.
const (
	ChangeCreate = "create"
	ChangeUpdate = "update"
	ChangeDelete = "delete"
)

// keepPolicy is the annotation with which Helm leaves an object in place when a release drops it.
const keepPolicy = "helm.sh/resource-policy"

// DiffRelease compares manifest, what an apply would make the release (empty: its latest revision again,
// as a drift repair does), with the live objects, the way Helm's three-way merge applies it: the fields
// the manifest sets that live has otherwise (with the normalization drift detection uses, so a field it
// would not report is not a change), the fields the release's deployed revision set that manifest drops,
// objects to create, and objects of the deployed revision that manifest drops (deleted, unless
// annotated helm.sh/resource-policy: keep). opts leave known differences and ignored objects out. Sorted
// by kind, namespace and name. A release that does not exist compares manifest with live objects alone.
func (c *Client) DiffRelease(ctx context.Context, namespace, name, manifest string, opts CheckOptions) ([]ObjectChange, error) {
	hist, err := c.history(ctx, namespace, name)
	if err != nil && !errors.Is(err, ErrReleaseNotFound) {
		return nil, c.errorf(namespace, name, "diff", err)
	}
	var old string
	if base := deployedOf(hist); base != nil {
		old = base.Manifest
	}
	if manifest == "" {
		if len(hist) == 0 {
			return nil, c.errorf(namespace, name, "diff", ErrReleaseNotFound)
		}
		manifest = hist[len(hist)-1].Manifest
	}
	desired, err := manifestObjects(manifest)
	if err != nil {
		return nil, c.errorf(namespace, name, "diff: new manifest", err)
	}
	previous, err := parsedManifests.objects(old)
	if err != nil {
		return nil, c.errorf(namespace, name, "diff: deployed manifest", err)
	}
	d := &releaseDiff{c: c, namespace: namespace, groups: map[fetchGroup][]*checkItem{}}
	wanted := map[ObjectRef]*checkItem{}
	var order []*checkItem
	for _, o := range desired {
		it, err := d.add(o)
		if err != nil {
			return nil, c.errorf(namespace, name, "diff", err)
		}
		if wanted[it.ref] == nil {
			wanted[it.ref] = it
			order = append(order, it)
		}
	}
	before := map[ObjectRef]*unstructured.Unstructured{}
	var dropped []*checkItem
	for _, o := range previous {
		it, err := d.add(o)
		if err != nil {
			return nil, c.errorf(namespace, name, "diff", err)
		}
		before[it.ref] = o
		if wanted[it.ref] == nil && o.GetAnnotations()[keepPolicy] != "keep" {
			it.orphan = true
			dropped = append(dropped, it)
		}
	}
	for g, its := range d.groups {
		if err := c.fetch(ctx, g, its); err != nil {
			return nil, c.errorf(namespace, name, "diff", err)
		}
	}
	var out []ObjectChange
	for _, it := range order {
		if it.result != nil && it.result.State == StateUnknown {
			return nil, c.errorf(namespace, name, "diff", errors.New(it.result.Message))
		}
		norm := opts.forObject(it.ref)
		if norm.ignored {
			continue
		}
		if it.live == nil {
			out = append(out, ObjectChange{Ref: it.ref, Change: ChangeCreate})
			continue
		}
		want, live := norm.forDiff(it.desired.Object, it.live.Object)
		fields := driftFields(want, live)
		if was := before[it.ref]; was != nil {
			drop, _ := norm.forDiff(was.Object, nil)
			fields = append(fields, droppedFields(drop, want, live)...)
		}
		if len(fields) > 0 {
			slices.SortFunc(fields, func(a, b FieldChange) int { return strings.Compare(a.Path, b.Path) })
			out = append(out, ObjectChange{Ref: it.ref, Change: ChangeUpdate, Fields: fields})
		}
	}
	for _, it := range dropped {
		if it.live != nil && !opts.forObject(it.ref).ignored {
			out = append(out, ObjectChange{Ref: it.ref, Change: ChangeDelete})
		}
	}
	slices.SortFunc(out, func(a, b ObjectChange) int { return strings.Compare(sortKey(a.Ref), sortKey(b.Ref)) })
	return out, nil
}

// deployedOf is the revision Helm's upgrade merges from: the latest deployed one, else the latest.
func deployedOf(hist []*release.Release) *release.Release {
	for i := len(hist) - 1; i >= 0; i-- {
		if hist[i].Info != nil && hist[i].Info.Status == release.StatusDeployed {
			return hist[i]
		}
	}
	if len(hist) > 0 {
		return hist[len(hist)-1]
	}
	return nil
}

// releaseDiff groups a diff's objects by resource and namespace, so each group is read with one LIST.
type releaseDiff struct {
	c         *Client
	namespace string
	groups    map[fetchGroup][]*checkItem
}

func (d *releaseDiff) add(o *unstructured.Unstructured) (*checkItem, error) {
	it := &checkItem{desired: o, ref: ObjectRef{APIVersion: o.GetAPIVersion(), Kind: o.GetKind(), Name: o.GetName(), Namespace: o.GetNamespace()}}
	mapping, err := d.c.restMapping(o.GroupVersionKind())
	switch {
	case meta.IsNoMatchError(err):
		// Not served (yet): a CRD the same apply installs, say. There is nothing live to compare.
		it.result = &ObjectStatus{State: StateMissing}
		return it, nil
	case err != nil:
		return nil, err
	}
	if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
		if it.ref.Namespace == "" {
			it.ref.Namespace = d.namespace
		}
	} else {
		it.ref.Namespace = ""
	}
	g := fetchGroup{resource: mapping.Resource, namespace: it.ref.Namespace}
	d.groups[g] = append(d.groups[g], it)
	return it, nil
}

// droppedFields are the fields the deployed manifest set that the new one no longer sets and live still
// has: Helm's three-way merge removes them. Maps are followed key by key; a list is one value (the new
// manifest's list, if it sets one, is compared by driftFields).
func droppedFields(was, want, live map[string]any) []FieldChange {
	var out []FieldChange
	var walk func(path string, was, want, live map[string]any)
	walk = func(path string, was, want, live map[string]any) {
		for _, k := range slices.Sorted(maps.Keys(was)) {
			p := k
			if path != "" {
				p = path + "." + k
			}
			if path == "" && (k == "apiVersion" || k == "kind" || k == "status") {
				continue
			}
			if path == "metadata" && k != "labels" && k != "annotations" {
				continue
			}
			lv, inLive := live[k]
			if !inLive {
				continue
			}
			wasMap, wasIsMap := was[k].(map[string]any)
			liveMap, liveIsMap := lv.(map[string]any)
			wv, inWant := want[k]
			if !inWant || wv == nil {
				switch {
				case wasIsMap && liveIsMap:
					// Only what the old manifest set goes: keys others added (Helm's own labels) stay.
					walk(p, wasMap, nil, liveMap)
				case was[k] != nil:
					out = append(out, FieldChange{Path: p, Live: lv})
				}
				continue
			}
			if wantMap, ok := wv.(map[string]any); ok && wasIsMap && liveIsMap {
				walk(p, wasMap, wantMap, liveMap)
			}
		}
	}
	walk("", was, want, live)
	return out
}

// String is the change as a line, for logs and tests.
func (o ObjectChange) String() string {
	return fmt.Sprintf("%s %s", o.Change, o.Ref)
}
