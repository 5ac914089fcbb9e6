// Package activities holds every side effect of Flotilla's workflows: git, rendering, Helm and
// Kubernetes calls, reads of the inventory, and the Temporal calls a workflow cannot make itself
// (visibility lists, a sync signal to every GitRepo). Activities are idempotent: a retry after a worker
// crash observes first and does only what is still missing.
package activities

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.uber.org/zap"

	"github.com/flotilla-gitops/flotilla/agentclient"
	"github.com/flotilla-gitops/flotilla/api"
	"github.com/flotilla-gitops/flotilla/fleet"
	"github.com/flotilla-gitops/flotilla/fleet/plan"
	"github.com/flotilla-gitops/flotilla/fleet/render"
	"github.com/flotilla-gitops/flotilla/fleet/target"
	"github.com/flotilla-gitops/flotilla/internal/chartcheck"
	"github.com/flotilla-gitops/flotilla/internal/gitcache"
	"github.com/flotilla-gitops/flotilla/internal/parallel"
	"github.com/flotilla-gitops/flotilla/inventory"
)

// Activities holds the worker's dependencies; workflows reference its methods through a nil pointer.
type Activities struct {
	Git       *gitcache.Cache
	Clusters  *agentclient.Pool
	Inventory InventoryReader
	// Temporal lists cluster workflows (visibility); it may be nil in tests that do not call ListClusterWorkflows.
	Temporal client.Client
	Log      *zap.Logger
	// BundleConcurrency bounds parallel bundle work within one cluster (default 8).
	BundleConcurrency int
	// ChartCheck renders a chart's templates in a bounded child process before Helm renders them in this
	// one; nil checks nothing (tests that call activities in-process).
	ChartCheck *chartcheck.Checker

	renders   renderCache
	inventory inventoryCache
}

// Poll resolves the commit to deploy and reads the inventory generation: one ls-remote, no clone.
func (a *Activities) Poll(ctx context.Context, in api.PollInput) (api.PollResult, error) {
	commit, err := a.Git.Resolve(ctx, in.Repo, in.Branch, in.Revision, in.ClientSecretName)
	if err != nil {
		var nf *gitcache.NotFoundError
		if errors.As(err, &nf) {
			return api.PollResult{}, temporal.NewApplicationError(err.Error(), api.ErrTypeRevisionNotFound)
		}
		return api.PollResult{}, temporal.NewApplicationError(err.Error(), api.ErrTypeGit)
	}
	inv, err := a.Inventory.Read(ctx)
	if err != nil {
		return api.PollResult{}, fmt.Errorf("reading the cluster inventory: %w", err)
	}
	return api.PollResult{Commit: commit, InventoryGeneration: inv.Generation}, nil
}

// Plan discovers bundles at a commit and computes which clusters each targets (fleet/plan). A bundle whose
// fleet.yaml does not load is listed in Unloaded and planned with the GitRepo's targets; the workflow keeps
// it where the last good plan had it.
func (a *Activities) Plan(ctx context.Context, in api.PlanInput) (api.Plan, error) {
	if err := target.Validate(in.Targets); err != nil {
		return api.Plan{}, temporal.NewNonRetryableApplicationError("spec.targets: "+err.Error(), api.ErrTypeInvalidTargets, nil)
	}
	dir, err := a.Git.Checkout(ctx, in.Repo, in.Commit, in.ClientSecretName)
	if err != nil {
		return api.Plan{}, temporal.NewApplicationError(err.Error(), api.ErrTypeGit)
	}
	bundles, err := plan.Load(dir, in.GitRepo, in.Paths, in.Targets)
	if err != nil {
		return api.Plan{}, temporal.NewNonRetryableApplicationError(err.Error(), api.ErrTypeBundle, nil)
	}
	inv, err := a.Inventory.Read(ctx)
	if err != nil {
		return api.Plan{}, fmt.Errorf("reading the cluster inventory: %w", err)
	}
	p := api.Plan{Commit: in.Commit, InventoryGeneration: inv.Generation, Clusters: []api.PlannedCluster{}, Warnings: plan.Warnings(bundles)}
	for i, b := range bundles {
		p.Bundles = append(p.Bundles, api.BundleRef{Name: b.Ref.Name, Path: b.Ref.Path})
		if b.Err != nil {
			p.Unloaded = append(p.Unloaded, i)
		}
	}
	for _, c := range inv.Clusters {
		info := inv.Info(c)
		pc := api.PlannedCluster{Name: c.Metadata.Name, Digest: inventory.Digest(c, info.Groups), Paused: c.Spec.Paused,
			Bundles: plan.For(bundles, info)}
		if len(pc.Bundles) > 0 {
			p.Clusters = append(p.Clusters, pc)
		}
	}
	sort.Slice(p.Clusters, func(i, j int) bool { return p.Clusters[i].Name < p.Clusters[j].Name })
	return p, nil
}

// clusterHandle is what observe and apply need for one cluster.
type clusterHandle struct {
	info   fleet.ClusterInfo
	client *agentclient.Client
	dir    string
	digest string
}

// handle resolves the cluster and the checkout. ping checks reachability first, so an apply fails fast
// with a clear error; an observe skips it, because its first read fails just as clearly and an idle check
// should cost as few requests as possible.
func (a *Activities) handle(ctx context.Context, t api.ClusterTarget, ping bool) (*clusterHandle, error) {
	inv, err := a.inventoryFor(ctx, t)
	if err != nil {
		return nil, fmt.Errorf("reading the cluster inventory: %w", err)
	}
	c, ok := inv.Cluster(t.Cluster)
	if !ok {
		return nil, temporal.NewNonRetryableApplicationError(fmt.Sprintf("cluster %q is not in the inventory", t.Cluster), api.ErrTypeUnknownCluster, nil)
	}
	info := inv.Info(c)
	cl, err := a.Clusters.Get(agentclient.Config{KubeconfigPath: c.Spec.KubeConfigPath, Context: c.Spec.KubeConfigContext})
	if err != nil {
		return nil, temporal.NewApplicationError(fmt.Sprintf("cluster %q: %v", t.Cluster, err), api.ErrTypeUnreachable)
	}
	if ping {
		if err := cl.Ping(ctx); err != nil {
			return nil, temporal.NewApplicationError(fmt.Sprintf("cluster %q unreachable: %v", t.Cluster, err), api.ErrTypeUnreachable)
		}
	}
	dir, err := a.Git.Checkout(ctx, t.Repo, t.Commit, t.ClientSecretName)
	if err != nil {
		return nil, temporal.NewApplicationError(err.Error(), api.ErrTypeGit)
	}
	return &clusterHandle{info: info, client: cl, dir: dir, digest: inventory.Digest(c, info.Groups)}, nil
}

// Observe renders each bundle for the cluster and reads its release and, if asked, the objects it owns.
// Render errors are per bundle: one broken bundle never hides the others.
func (a *Activities) Observe(ctx context.Context, in api.ObserveInput) (api.Observation, error) {
	h, err := a.handle(ctx, in.Target, false)
	if err != nil {
		return api.Observation{}, err
	}
	stop := heartbeatEvery(ctx, 3*time.Second)
	defer stop()
	return a.observe(ctx, h, in.Target, in.Resources)
}

func (a *Activities) observe(ctx context.Context, h *clusterHandle, t api.ClusterTarget, resources bool) (api.Observation, error) {
	obs := api.Observation{Bundles: make([]api.BundleObservation, len(t.Bundles))}
	err := a.forEach(len(t.Bundles), func(i int) error {
		o, err := a.observeBundle(ctx, h, t, t.Bundles[i], resources)
		obs.Bundles[i] = o
		return err
	})
	if err != nil {
		return api.Observation{}, a.clusterError(t.Cluster, err)
	}
	obs.CheckedAt = time.Now()
	return obs, nil
}

func (a *Activities) observeBundle(ctx context.Context, h *clusterHandle, t api.ClusterTarget, ref api.BundleRef, resources bool) (api.BundleObservation, error) {
	o := api.BundleObservation{Bundle: ref.Name}
	rel, err := a.render(h, t, ref, false)
	if err != nil {
		o.Error, o.ErrorType = err.Error(), renderErrorType(err)
		return o, a.observeStuck(ctx, h, t, &o, resources)
	}
	o.ReleaseName, o.Namespace, o.Deploy, o.DesiredID = rel.Name, rel.Namespace, rel.Deploy, rel.DeploymentID
	var st agentclient.ReleaseState
	var objs []agentclient.ObjectStatus
	if resources {
		st, objs, err = h.client.Inspect(ctx, rel.Namespace, rel.Name, checkOptions(rel.Options))
	} else {
		st, err = h.client.Observe(ctx, rel.Namespace, rel.Name)
	}
	if err != nil {
		return o, err
	}
	if conflict := releaseConflict(st, rel, t); conflict != "" {
		// Not ours: neither its revision nor its objects are this bundle's status.
		o.Error, o.ErrorType = conflict, api.ErrTypeReleaseConflict
		return o, nil
	}
	o.Release = releaseInfo(st)
	if resources && st.Exists && st.Status == "deployed" {
		o.Resources = summarizeObjects(objs)
	}
	return o, nil
}

// observeStuck reads what still runs of a bundle that no longer renders: without a rendering there is no
// release name to look up, so the release is found by the labels Flotilla stamped on it. Status then shows
// the live release (its revision, commit and objects) beside the error that stops it from moving, instead
// of a bundle that seems to run nothing. Only a lost cluster is an error; any other failed read leaves the
// render error alone.
func (a *Activities) observeStuck(ctx context.Context, h *clusterHandle, t api.ClusterTarget, o *api.BundleObservation, resources bool) error {
	rels, err := h.client.ListReleases(ctx, map[string]string{api.LabelGitRepo: t.GitRepo, api.LabelBundle: o.Bundle})
	if err != nil {
		if agentclient.IsUnreachable(err) {
			return err
		}
		return nil
	}
	if len(rels) == 0 {
		return nil
	}
	live := rels[0]
	for _, r := range rels[1:] { // one release per bundle and cluster; should there be more, the newest
		if r.Updated.After(live.Updated) {
			live = r
		}
	}
	o.ReleaseName, o.Namespace = live.Name, live.Namespace
	o.Release = releaseInfo(live)
	if !resources || live.Status != "deployed" {
		return nil
	}
	st, objs, err := h.client.Inspect(ctx, live.Namespace, live.Name, agentclient.CheckOptions{})
	if err != nil {
		if agentclient.IsUnreachable(err) {
			return err
		}
		return nil
	}
	o.Release = releaseInfo(st)
	o.Resources = summarizeObjects(objs)
	return nil
}

func releaseInfo(st agentclient.ReleaseState) api.ReleaseInfo {
	return api.ReleaseInfo{Exists: st.Exists, Status: st.Status, Revision: st.Revision, DeploymentID: st.DeploymentID,
		Description: st.Description, Commit: st.Labels[api.LabelCommit]}
}

// Apply performs the decided release actions. Each action first re-checks that the bundle still renders
// to the expected deployment ID and that the release does not already hold it, so a retry after a crash
// never adds a Helm revision.
func (a *Activities) Apply(ctx context.Context, in api.ApplyInput) (api.ApplyResult, error) {
	h, err := a.handle(ctx, in.Target, true)
	if err != nil {
		return api.ApplyResult{}, err
	}
	stop := heartbeatEvery(ctx, 3*time.Second)
	defer stop()
	res := api.ApplyResult{Bundles: make([]api.BundleApplyResult, len(in.Actions))}
	if in.Sweep != nil {
		removed, err := a.sweep(ctx, h.client, in.Target.GitRepo, in.Target.Cluster, h.info.ConfineToNamespace, *in.Sweep)
		res.Swept = removed
		if err != nil {
			if agentclient.IsUnreachable(err) {
				return api.ApplyResult{}, a.clusterError(in.Target.Cluster, err)
			}
			res.SweepError = err.Error()
		}
	}
	refs := map[string]api.BundleRef{}
	for _, r := range in.Target.Bundles {
		refs[r.Name] = r
	}
	err = a.forEach(len(in.Actions), func(i int) error {
		r, err := a.applyBundle(ctx, h, in.Target, refs[in.Actions[i].Bundle], in.Actions[i])
		res.Bundles[i] = r
		return err
	})
	if err != nil {
		return api.ApplyResult{}, a.clusterError(in.Target.Cluster, err)
	}
	if in.Observe {
		// What was applied stands even if this read fails; the workflow then observes on its own.
		if obs, err := a.observe(ctx, h, in.Target, true); err == nil {
			res.Observation = &obs
		}
	}
	return res, nil
}

func (a *Activities) applyBundle(ctx context.Context, h *clusterHandle, t api.ClusterTarget, ref api.BundleRef, act api.BundleAction) (api.BundleApplyResult, error) {
	out := api.BundleApplyResult{Bundle: act.Bundle}
	log := a.logger().With(zap.String("cluster", t.Cluster), zap.String("bundle", act.Bundle), zap.String("action", act.Action))
	rel, err := a.render(h, t, ref, true)
	if err != nil {
		out.Error, out.ErrorType = err.Error(), renderErrorType(err)
		return out, nil
	}
	if rel.DeploymentID != act.ExpectedID {
		out.Error, out.ErrorType = "desired state changed since it was observed", api.ErrTypeStale
		return out, nil
	}
	st, err := h.client.Observe(ctx, rel.Namespace, rel.Name)
	if err != nil {
		return out, err
	}
	if conflict := releaseConflict(st, rel, t); conflict != "" {
		// Checked again here: the release may have appeared since the observation that decided this.
		out.Error, out.ErrorType = conflict, api.ErrTypeReleaseConflict
		return out, nil
	}
	action := act.Action
	if action == api.ActionRecover {
		if err := h.client.DiscardPending(ctx, rel.Namespace, rel.Name); err != nil {
			return a.applyFailure(out, err)
		}
		if st, err = h.client.Observe(ctx, rel.Namespace, rel.Name); err != nil {
			return out, err
		}
		action = api.ActionUpgrade
	}
	if action != api.ActionRollback && st.Exists && st.Status == "deployed" && st.DeploymentID == act.ExpectedID {
		out.Skipped, out.Revision = true, st.Revision
		return out, nil
	}
	if action == api.ActionRollback {
		rev, err := h.client.Rollback(ctx, agentclient.RollbackRequest{
			Namespace: rel.Namespace, Name: rel.Name, Force: act.Force, MaxHistory: maxHistory(rel.Options),
			KeepFailHistory: rel.Options.CorrectDrift != nil && rel.Options.CorrectDrift.KeepFailHistory,
		})
		if err != nil {
			return a.applyFailure(out, err)
		}
		log.Info("drift corrected", zap.Int("revision", rev))
		out.Revision = rev
		return out, nil
	}
	req := ApplyRequestFor(rel, t.GitRepo, t.Cluster, t.Commit)
	check := chartcheck.Request{Cluster: t.Cluster, ClusterDigest: h.digest, DeploymentID: rel.DeploymentID, Apply: req, Latest: st}
	if err := a.ChartCheck.Check(ctx, check); err != nil {
		var limit *chartcheck.LimitError
		if !errors.As(err, &limit) {
			return a.applyFailure(out, err)
		}
		out.Error, out.ErrorType = err.Error(), api.ErrTypeChartRenderLimit
		return out, nil
	}
	var r agentclient.ApplyResult
	if st.Exists {
		r, err = h.client.Upgrade(ctx, req)
	} else {
		r, err = h.client.Install(ctx, req)
	}
	if err != nil {
		return a.applyFailure(out, err)
	}
	log.Info("release applied", zap.String("release", rel.Name), zap.Int("revision", r.Revision))
	out.Revision = r.Revision
	return out, nil
}

// ApplyRequestFor is the Helm install or upgrade Apply makes for a rendered bundle: the release labels that
// record its deployment ID and origin, and the bundle's Helm options. The benchmark's direct baseline makes
// the very same call.
func ApplyRequestFor(rel *render.Release, gitRepo, cluster, commit string) agentclient.ApplyRequest {
	req := agentclient.ApplyRequest{
		Name: rel.Name, Namespace: rel.Namespace, Chart: rel.Chart, Values: rel.Values, PostRenderer: rel.PostRenderer,
		Labels: map[string]string{
			api.LabelDeploymentID: rel.DeploymentID, api.LabelGitRepo: gitRepo, api.LabelBundle: rel.Bundle,
			api.LabelCluster: cluster, api.LabelCommit: api.ShortCommit(commit),
		},
		CreateNamespace:    true,
		ConfineToNamespace: rel.ForcedNamespace,
		MaxHistory:         maxHistory(rel.Options),
		Description:        fmt.Sprintf("flotilla: gitrepo %s commit %s", gitRepo, api.ShortCommit(commit)),
	}
	if rel.Options.KeepResources {
		req.Labels[api.LabelKeepResources] = "true"
	}
	if hopts := rel.Options.Helm; hopts != nil {
		req.Force, req.TakeOwnership, req.Atomic, req.WaitForJobs = hopts.Force, hopts.TakeOwnership, hopts.Atomic, hopts.WaitForJobs
		if hopts.TimeoutSeconds > 0 {
			req.Timeout, req.Wait = time.Duration(hopts.TimeoutSeconds)*time.Second, true
		}
	}
	if cd := rel.Options.CorrectDrift; cd != nil && cd.Force {
		req.Force = true
	}
	return req
}

func checkOptions(o fleet.BundleDeploymentOptions) agentclient.CheckOptions {
	co := agentclient.CheckOptions{IgnoreConditions: o.Ignore.Conditions}
	if o.Diff != nil {
		co.ComparePatches = o.Diff.ComparePatches
	}
	return co
}

// applyFailure keeps a failed action on its bundle, except a lost cluster, which fails the activity so
// the whole cluster is retried.
func (a *Activities) applyFailure(out api.BundleApplyResult, err error) (api.BundleApplyResult, error) {
	if agentclient.IsUnreachable(err) {
		return out, err
	}
	out.Error = err.Error()
	out.ErrorType = api.ErrTypeApply
	if agentclient.IsInvalid(err) {
		out.ErrorType = api.ErrTypeInvalid
	}
	return out, nil
}

// Uninstall removes a GitRepo's releases from a cluster, except those listed in Keep.
func (a *Activities) Uninstall(ctx context.Context, in api.UninstallInput) (api.UninstallResult, error) {
	inv, err := a.Inventory.Read(ctx)
	if err != nil {
		return api.UninstallResult{}, fmt.Errorf("reading the cluster inventory: %w", err)
	}
	c, ok := inv.Cluster(in.Cluster)
	if !ok {
		// The cluster left the inventory; there is nothing we can reach to uninstall from.
		return api.UninstallResult{}, nil
	}
	cl, err := a.Clusters.Get(agentclient.Config{KubeconfigPath: c.Spec.KubeConfigPath, Context: c.Spec.KubeConfigContext})
	if err != nil {
		return api.UninstallResult{}, temporal.NewApplicationError(fmt.Sprintf("cluster %q: %v", in.Cluster, err), api.ErrTypeUnreachable)
	}
	if in.Sweep != nil {
		s := *in.Sweep
		s.KeepResources = s.KeepResources || in.KeepResources
		removed, err := a.sweep(ctx, cl, in.GitRepo, in.Cluster, c.Spec.ConfineToNamespace, s)
		if err != nil {
			return api.UninstallResult{Removed: removed}, a.clusterError(in.Cluster, err)
		}
		return api.UninstallResult{Removed: removed}, nil
	}
	rels, err := cl.ListReleases(ctx, map[string]string{api.LabelGitRepo: in.GitRepo})
	if err != nil {
		return api.UninstallResult{}, a.clusterError(in.Cluster, err)
	}
	confined := c.Spec.ConfineToNamespace
	var res api.UninstallResult
	for _, r := range rels {
		if confined != "" && r.Namespace != confined {
			// Other namespaces of a confined cluster's API server belong to other clusters.
			continue
		}
		if err := cl.Uninstall(ctx, r.Namespace, r.Name, in.KeepResources || r.Labels[api.LabelKeepResources] == "true"); err != nil {
			return res, a.clusterError(in.Cluster, err)
		}
		res.Removed = append(res.Removed, r.Namespace+"/"+r.Name)
		activity.RecordHeartbeat(ctx, len(res.Removed))
	}
	return res, nil
}

// ListClusterWorkflows lists the running cluster workflows of a GitRepo through Temporal's visibility.
func (a *Activities) ListClusterWorkflows(ctx context.Context, in api.ListClusterWorkflowsInput) (api.ListClusterWorkflowsResult, error) {
	query := fmt.Sprintf("WorkflowType = '%s' AND %s = '%s' AND ExecutionStatus = 'Running'",
		api.ClusterWorkflowType, api.SearchAttrGitRepo, in.GitRepo)
	res := api.ListClusterWorkflowsResult{Clusters: []string{}}
	var token []byte
	for {
		page, err := a.Temporal.ListWorkflow(ctx, listRequest(query, token))
		if err != nil {
			return res, err
		}
		for _, e := range page.Executions {
			if p := e.GetSearchAttributes().GetIndexedFields()[api.SearchAttrCluster]; p != nil {
				var name string
				if err := decodePayload(p, &name); err == nil {
					res.Clusters = append(res.Clusters, name)
				}
			}
		}
		token = page.NextPageToken
		if len(token) == 0 {
			break
		}
	}
	sort.Strings(res.Clusters)
	return res, nil
}

// NotifyGitRepos signals `sync` to every running GitRepo workflow, so a cluster added, changed or removed
// is planned at once rather than at the next poll. A GitRepo that ends meanwhile is skipped.
func (a *Activities) NotifyGitRepos(ctx context.Context, in api.NotifyGitReposInput) (api.NotifyGitReposResult, error) {
	const query = "WorkflowType = '" + api.GitRepoWorkflowType + "' AND ExecutionStatus = 'Running'"
	res := api.NotifyGitReposResult{}
	var token []byte
	for {
		page, err := a.Temporal.ListWorkflow(ctx, listRequest(query, token))
		if err != nil {
			return res, err
		}
		for _, e := range page.Executions {
			err := a.Temporal.SignalWorkflow(ctx, e.GetExecution().GetWorkflowId(), "", api.SignalSync, nil)
			var nf *serviceerror.NotFound
			if err != nil && !errors.As(err, &nf) {
				return res, err
			}
			res.Notified++
		}
		if token = page.NextPageToken; len(token) == 0 {
			return res, nil
		}
	}
}

// clusterError turns a cluster-level failure into a retryable, typed error that names the cluster.
func (a *Activities) clusterError(cluster string, err error) error {
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) {
		return err
	}
	if agentclient.IsUnreachable(err) {
		return temporal.NewApplicationError(fmt.Sprintf("cluster %q unreachable: %v", cluster, err), api.ErrTypeUnreachable)
	}
	return temporal.NewApplicationError(fmt.Sprintf("cluster %q: %v", cluster, err), api.ErrTypeApply)
}

func (a *Activities) forEach(n int, fn func(i int) error) error {
	limit := a.BundleConcurrency
	if limit <= 0 {
		limit = 8
	}
	return parallel.ForEach(n, limit, fn)
}

func (a *Activities) logger() *zap.Logger {
	if a.Log == nil {
		return zap.NewNop()
	}
	return a.Log
}

// heartbeatEvery keeps a long activity alive and lets cancellation reach it.
func heartbeatEvery(ctx context.Context, d time.Duration) func() {
	if !activity.IsActivity(ctx) {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(d)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				activity.RecordHeartbeat(ctx)
			}
		}
	}()
	return func() { close(done) }
}

func maxHistory(o fleet.BundleDeploymentOptions) int {
	if o.Helm != nil && o.Helm.MaxHistory > 0 {
		return o.Helm.MaxHistory
	}
	return 5
}
