package activities

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/flotilla-gitops/flotilla/agentclient"
	"github.com/flotilla-gitops/flotilla/api"
	"github.com/flotilla-gitops/flotilla/internal/chartcheck"
	"github.com/flotilla-gitops/flotilla/render"
)

// Diff tells what the next apply of the target would change on its cluster (ADR 33), deciding each
// bundle's action by the rule the cluster workflow applies (workflows/decide.go) and comparing the
// manifest that action would apply with the live objects. Nothing is written: an install or upgrade is a
// Helm server-side dry run, after the same render check an apply makes. Per-bundle problems are the
// bundle's error; only a lost cluster fails the activity.
func (a *Activities) Diff(ctx context.Context, in api.DiffClusterInput) (api.ClusterDiff, error) {
	h, err := a.handle(ctx, in.Target, true, granted{in.Prepared, in.Generation, in.Grant})
	if err != nil {
		return api.ClusterDiff{}, err
	}
	stop := heartbeatEvery(ctx, 3*time.Second)
	defer stop()
	t := in.Target
	if h.prepared != nil {
		if err := a.fetchPackages(ctx, t, in.Prepared); err != nil {
			return api.ClusterDiff{}, a.clusterError(t.Cluster, err)
		}
	}
	out := api.ClusterDiff{Cluster: t.Cluster, Commit: t.Commit, Bundles: make([]api.BundleDiff, len(t.Bundles))}
	err = a.forEach(len(t.Bundles), func(i int) error {
		b, err := a.diffBundle(ctx, h, t, t.Bundles[i])
		out.Bundles[i] = b
		return err
	})
	if err == nil {
		var gone []api.BundleDiff
		gone, err = a.diffLeaving(ctx, h, t, out.Bundles)
		out.Bundles = append(out.Bundles, gone...)
	}
	if err != nil {
		return api.ClusterDiff{}, a.clusterError(t.Cluster, err)
	}
	return out, nil
}

func (a *Activities) diffBundle(ctx context.Context, h *clusterHandle, t api.ClusterTarget, ref api.BundleRef) (out api.BundleDiff, err error) {
	out = api.BundleDiff{Bundle: ref.Name, Action: api.DiffNone}
	if ref.DependsOnError != "" {
		out.Error = ref.DependsOnError
		return out, nil
	}
	rel, unreachable, err := a.renderOn(ctx, h, t, ref, true)
	if unreachable != nil {
		return out, unreachable
	}
	if err != nil {
		out.Error = err.Error()
		return out, nil
	}
	defer func() { redactDiff(&out, rel) }()
	out.Release, out.Namespace = rel.Name, rel.Namespace
	if !rel.Deploy {
		// Its release, if any, is swept: diffLeaving lists it.
		out.Reason = notDeployedHere
		return out, nil
	}
	st, err := h.client.Observe(ctx, rel.Namespace, rel.Name)
	if err != nil {
		return out, err
	}
	if conflict := releaseConflict(st, rel, t); conflict != "" {
		out.Error = conflict
		return out, nil
	}
	out.Action, out.Reason = nextAction(st, rel.DeploymentID)
	if st.Pending() {
		out.Error = fmt.Sprintf("release is locked by an operation that did not finish (%s): the next apply recovers it first; diff again after", st.Status)
		return out, nil
	}
	manifest := "" // the release's latest revision, re-applied
	if out.Action == api.DiffInstall || out.Action == api.DiffUpgrade {
		req := ApplyRequestFor(rel, t.Key(), t.Cluster, t.Commit)
		check := chartcheck.Request{Cluster: t.Cluster, ClusterDigest: h.digest, DeploymentID: rel.DeploymentID, Apply: req, Latest: st,
			ClusterNamespace: t.Namespace}
		if err := a.ChartCheck.Check(ctx, check); err != nil {
			out.Error = err.Error()
			return out, nil
		}
		if manifest, err = h.client.DryRun(ctx, req, st.Exists); err != nil {
			if agentclient.IsUnreachable(err) {
				return out, err
			}
			out.Error = err.Error()
			return out, nil
		}
		out.Revision = st.Revision + 1
	}
	changes, err := h.client.DiffRelease(ctx, rel.Namespace, rel.Name, manifest, checkOptions(rel.Options))
	if err != nil {
		if agentclient.IsUnreachable(err) {
			return out, err
		}
		out.Error = err.Error()
		return out, nil
	}
	out.Objects = objectDiffs(changes, rel.Redact)
	if out.Action == api.DiffNone && len(out.Objects) > 0 {
		out.Reason = "drift stays: correctDrift is off"
		if cd := rel.Options.CorrectDrift; cd != nil && cd.Enabled {
			out.Action, out.Reason, out.Revision = api.DiffRepair, "correctDrift: the drift is reverted", st.Revision+1
		}
	}
	if rel.Paused && out.Action != api.DiffNone {
		out.Reason = fmt.Sprintf("paused: nothing is applied until resumed; then %s (%s)", out.Action, out.Reason)
		out.Action, out.Revision = api.DiffNone, 0
	}
	return out, nil
}

const notDeployedHere = "not deployed to this cluster"

// nextAction is the release's next action (api.ReleaseInfo.NextAction, as the cluster workflow decides it,
// a failed revision's backoff aside: the diff says what the apply does when it comes), before drift is
// known, and why.
func nextAction(st agentclient.ReleaseState, desiredID string) (string, string) {
	switch releaseInfo(st).NextAction(desiredID, true) {
	case api.ActionInstall:
		return api.DiffInstall, "no release yet"
	case api.ActionRecover:
		return api.DiffUpgrade, "release locked (" + st.Status + ")"
	case api.ActionUpgrade:
		if st.DeploymentID != desiredID {
			return api.DiffUpgrade, "the desired state changed (deployment " + shortID(st.DeploymentID) + " → " + shortID(desiredID) + ")"
		}
		return api.DiffUpgrade, "revision " + fmt.Sprint(st.Revision) + " is " + st.Status
	}
	return api.DiffNone, ""
}

func shortID(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	if id == "" {
		return "none"
	}
	return id
}

// diffLeaving lists the releases the apply's sweep would uninstall (activities/sweep.go): the GitRepo's
// on this cluster that no bundle of the target deploys. A bundle that failed to diff keeps its releases,
// as the sweep keeps those of a bundle that failed to render.
func (a *Activities) diffLeaving(ctx context.Context, h *clusterHandle, t api.ClusterTarget, bundles []api.BundleDiff) ([]api.BundleDiff, error) {
	// The sweep the cluster workflow would ask for (workflows/sweep.go), from these bundles.
	var s api.Sweep
	for _, b := range bundles {
		switch {
		case b.Error != "" || b.Release == "":
			s.KeepBundles = append(s.KeepBundles, b.Bundle) // a bundle that failed keeps every release it has
		case b.Reason != notDeployedHere:
			s.Releases = append(s.Releases, api.ReleaseRef{Bundle: b.Bundle, Namespace: b.Namespace, Name: b.Release})
		}
	}
	leaving, err := sweepable(ctx, h.client, t.Key(), t.Cluster, h.info.ConfineToNamespace, s)
	if err != nil {
		return nil, err
	}
	var out []api.BundleDiff
	for _, r := range leaving {
		reason := "no bundle of the target deploys it here"
		if t.Options.KeepResources || r.Labels[api.LabelKeepResources] == "true" {
			reason += "; keepResources: its objects stay"
		}
		out = append(out, api.BundleDiff{Bundle: r.Labels[api.LabelBundle], Release: r.Name, Namespace: r.Namespace, Action: api.DiffUninstall, Reason: reason})
	}
	return out, nil
}

// maxFieldValue bounds a value quoted in a diff: enough to read an image or a replica count, not a whole
// ConfigMap's data in a workflow result.
const maxFieldValue = 300

// objectDiffs turns changes into the diff's objects, with every value passed through redact before it is
// cut: a valuesFrom Secret's value cut in two would no longer be found.
func objectDiffs(changes []agentclient.ObjectChange, redact func(string) string) []api.ObjectDiff {
	out := make([]api.ObjectDiff, 0, len(changes))
	for _, c := range changes {
		o := api.ObjectDiff{APIVersion: c.Ref.APIVersion, Kind: c.Ref.Kind, Namespace: c.Ref.Namespace, Name: c.Ref.Name, Change: c.Change}
		secret := c.Ref.Kind == "Secret" && c.Ref.APIVersion == "v1"
		for _, f := range c.Fields {
			fd := api.FieldDiff{Path: f.Path, Live: fieldValue(f.Live, redact), Desired: fieldValue(f.Desired, redact)}
			if secret && (f.Path == "data" || f.Path == "stringData" || strings.HasPrefix(f.Path, "data.") || strings.HasPrefix(f.Path, "stringData.")) {
				fd.Live, fd.Desired = masked(fd.Live), masked(fd.Desired)
			}
			o.Fields = append(o.Fields, fd)
		}
		out = append(out, o)
	}
	return out
}

func masked(v string) string {
	if v == "" {
		return ""
	}
	return `"***"`
}

// fieldValue is v as JSON, redacted, cut to maxFieldValue bytes; "" for an absent value.
func fieldValue(v any, redact func(string) string) string {
	if v == nil {
		return ""
	}
	j, err := json.Marshal(v)
	if err != nil {
		j = []byte(fmt.Sprintf("%v", v))
	}
	b := redact(string(j))
	if len(b) > maxFieldValue {
		return fmt.Sprintf("%s… (%d bytes)", b[:maxFieldValue], len(b))
	}
	return b
}

// redactDiff keeps what a template made of a valuesFrom Secret out of the diff's messages, as out of
// status (objectDiffs redacts the values).
func redactDiff(d *api.BundleDiff, rel *render.Release) {
	d.Error, d.Reason = rel.Redact(d.Error), rel.Redact(d.Reason)
}
