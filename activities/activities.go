// Package activities holds every side effect of Flotilla's workflows: git, rendering, Helm and
// Kubernetes calls, reads of the inventory, and the Temporal calls a workflow cannot make itself
// (visibility lists, a sync signal to every GitRepo). Activities are idempotent: a retry after a worker
// crash observes first and does only what is still missing.
package activities

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.uber.org/zap"

	"github.com/flotilla-gitops/flotilla/agentclient"
	"github.com/flotilla-gitops/flotilla/api"
	"github.com/flotilla-gitops/flotilla/fleet"
	"github.com/flotilla-gitops/flotilla/internal/agentkey"
	"github.com/flotilla-gitops/flotilla/internal/agentmanifest"
	"github.com/flotilla-gitops/flotilla/internal/chartcheck"
	"github.com/flotilla-gitops/flotilla/internal/chartload"
	"github.com/flotilla-gitops/flotilla/internal/charts"
	"github.com/flotilla-gitops/flotilla/internal/content"
	"github.com/flotilla-gitops/flotilla/internal/gitcache"
	"github.com/flotilla-gitops/flotilla/internal/kubeconfigsecret"
	"github.com/flotilla-gitops/flotilla/internal/metrics"
	"github.com/flotilla-gitops/flotilla/internal/parallel"
	"github.com/flotilla-gitops/flotilla/inventory"
)

// Activities holds the worker's dependencies. Register records its methods under api's activity names, and
// the workflows call them by those names, never through this type.
type Activities struct {
	Git       *gitcache.Cache
	Clusters  *agentclient.Pool
	Inventory InventoryReader
	// Temporal lists cluster workflows (visibility); it may be nil in tests that do not call ListClusterWorkflows.
	Temporal client.Client
	// TaskQueue is the queue this worker polls: the visibility queries see only the workflows on it, this
	// installation's.
	TaskQueue string
	Log       *zap.Logger
	// BundleConcurrency bounds parallel bundle work within one cluster (default DefaultBundleConcurrency).
	BundleConcurrency int
	// HelmQPS and HelmBurst bound the requests to each cluster's API server (0: agentclient's defaults).
	HelmQPS   float32
	HelmBurst int
	// ChartCheck renders a chart's templates in a bounded child process before Helm renders them in this
	// one; nil checks nothing (tests that call activities in-process).
	ChartCheck *chartcheck.Checker
	// Charts fetches remote charts and chart dependencies into the worker's cache; nil refuses them.
	Charts *charts.Fetcher
	// HelmCreds resolves helmSecretName; nil knows none.
	HelmCreds chartload.Secrets
	// Content keeps the packages Prepare makes for agent-mode clusters, by digest (management side).
	Content *content.Store
	// Installation is what the agents of this installation's clusters default to (the worker's own Temporal
	// address, namespace and task queue, and its version for the image tag): AgentDesired makes their
	// effective configuration with it, as `flotilla agent manifest` does with the CLI's settings.
	Installation agentmanifest.Installation
	// Local, set in a flotilla-agent only, is the one cluster this process runs in (pull mode): its
	// activities apply the management side's prepared renderings to it and reach no other.
	Local *LocalCluster
	// InstallationKey, on the management side, seals packages to each cluster's key and grants what agents
	// act on (ADR 26); zero: nothing is sealed or granted.
	InstallationKey agentkey.Key
	// Targets reads the desired state a cluster workflow holds (ReadContent serves only its packages).
	Targets TargetReader
	// Workspaces is which workspaces this installation serves, and where their kubeconfigs are (ADR 27).
	Workspaces WorkspacePolicy
	// Metrics records applies, checks and git operations; nil records nothing.
	Metrics *metrics.Flotilla
	// KubeconfigSecrets reads the kubeconfig of a cluster registered with spec.kubeConfigSecret from the
	// management cluster (ADR 38); nil: such clusters are unreachable, with an error saying why.
	KubeconfigSecrets *kubeconfigsecret.Source

	renders   renderCache
	inventory inventoryCache
	packages  packageIndex
}

// TargetReader reads the desired state a cluster workflow holds now, and the one its GitRepo planned for
// the cluster in a diff of another commit (TemporalTargets).
type TargetReader interface {
	Target(ctx context.Context, key api.GitRepoKey, cluster string) (api.ClusterTarget, error)
	DiffTarget(ctx context.Context, key api.GitRepoKey, cluster string) (api.ClusterTarget, error)
}

// clusterHandle is what observe and apply need for one cluster.
type clusterHandle struct {
	info   fleet.ClusterInfo
	client *agentclient.Client
	dir    string
	digest string
	// prepared, in a flotilla-agent, are the management side's renderings by bundle name: the agent
	// renders nothing itself (renderPrepared).
	prepared map[string]api.PreparedBundle
	// keyOnce and targetKey are the digest of what every bundle's rendering on this handle shares (renderKey).
	keyOnce   sync.Once
	targetKey string
}

// handle resolves the cluster and the checkout (in an agent: the prepared renderings). ping checks
// reachability first, so an apply fails fast with a clear error; an observe skips it, because its first
// read fails just as clearly and an idle check should cost as few requests as possible.
func (a *Activities) handle(ctx context.Context, t api.ClusterTarget, ping bool, g granted) (*clusterHandle, error) {
	h, c, err := a.entry(ctx, t)
	if err != nil {
		return nil, err
	}
	if h.client, err = a.clusterClient(ctx, t, c); err != nil {
		return nil, err
	}
	if a.Local != nil {
		// The renderings are the management side's for this cluster, or nothing here acts on them, nor
		// even asks the cluster anything.
		if err := a.Local.guarded().verify(grantPrepared, preparedMessage(t, g.generation, g.bundles), g.grant); err != nil {
			return nil, err
		}
	}
	if ping {
		if err := h.client.Ping(ctx); err != nil {
			return nil, temporal.NewApplicationError(fmt.Sprintf("cluster %q unreachable: %v", clusterRef(t), err), api.ErrTypeUnreachable)
		}
	}
	if a.Local != nil {
		h.prepared = make(map[string]api.PreparedBundle, len(g.bundles))
		for _, p := range g.bundles {
			h.prepared[p.Bundle] = p
		}
		return h, nil
	}
	if h.dir, err = a.checkout(ctx, gitcache.Remote{URL: t.Repo, Workspace: t.Key().Namespace, Secret: t.ClientSecretName, CABundle: t.CABundle,
		InsecureSkipTLSVerify: t.InsecureSkipTLSVerify}, t.Commit, t.HelmOp); err != nil {
		return nil, gitError(err)
	}
	return h, nil
}

// granted is what an agent is given to act on: the management side's renderings and their grant.
type granted struct {
	bundles    []api.PreparedBundle
	generation int64
	grant      string
}

// entry is the target's cluster as the inventory has it, in a handle without a client or a checkout.
func (a *Activities) entry(ctx context.Context, t api.ClusterTarget) (*clusterHandle, fleet.Cluster, error) {
	if err := a.Workspaces.serves(t.Key().Namespace); err != nil {
		return nil, fleet.Cluster{}, err
	}
	inv, err := a.inventoryFor(ctx, t)
	if err != nil {
		return nil, fleet.Cluster{}, fmt.Errorf("reading the cluster inventory: %w", err)
	}
	c, ok := inv.Cluster(t.Key().Namespace, t.Cluster)
	if !ok {
		return nil, fleet.Cluster{}, temporal.NewNonRetryableApplicationError(fmt.Sprintf("cluster %q is not in the inventory", clusterRef(t)), api.ErrTypeUnknownCluster, nil)
	}
	info := inv.Info(c)
	return &clusterHandle{info: info, digest: inventory.Digest(c, info.Groups)}, c, nil
}

// clusterClient is the client of cluster c: in an agent, its own cluster's and no other; in the
// management worker, the one its kubeconfig reaches. An agent-mode cluster has no kubeconfig here, and
// the worker never reaches it: its tasks go to its agent.
func (a *Activities) clusterClient(ctx context.Context, t api.ClusterTarget, c fleet.Cluster) (*agentclient.Client, error) {
	if a.Local != nil {
		return a.Local.clientFor(t.Namespace, t.Cluster)
	}
	if c.Spec.Agent != nil {
		return nil, temporal.NewApplicationError(fmt.Sprintf("cluster %q is registered with an agent: only its flotilla-agent reaches it, "+
			"and this worker holds no kubeconfig for it", clusterRef(t)), api.ErrTypeUnreachable)
	}
	cfg := agentclient.Config{KubeconfigPath: c.Spec.KubeConfigPath, Context: c.Spec.KubeConfigContext, QPS: a.HelmQPS, Burst: a.HelmBurst}
	var cl *agentclient.Client
	var err error
	if c.Spec.KubeConfigSecret != "" {
		var data []byte
		if cfg.KubeconfigPath, data, err = a.KubeconfigSecrets.ForCluster(ctx, c); err == nil {
			cl, err = a.Clusters.GetFrom(cfg, data)
		}
	} else {
		if err := a.Workspaces.kubeconfig(t.Key().Namespace, t.Cluster, c.Spec.KubeConfigPath); err != nil {
			return nil, err
		}
		cl, err = a.Clusters.Get(cfg)
	}
	if err != nil {
		return nil, temporal.NewApplicationError(fmt.Sprintf("cluster %q: %v", clusterRef(t), err), api.ErrTypeUnreachable)
	}
	return cl, nil
}

// clusterRef names a target's cluster in messages: with its workspace outside fleet-default, where a
// cluster name is only unique within the workspace.
func clusterRef(t api.ClusterTarget) string { return fleet.DisplayName(t.Namespace, t.Cluster) }

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

// DefaultBundleConcurrency is how many bundles of one cluster an activity works on at once.
const DefaultBundleConcurrency = 8

func (a *Activities) forEach(n int, fn func(i int) error) error {
	limit := a.BundleConcurrency
	if limit <= 0 {
		limit = DefaultBundleConcurrency
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
