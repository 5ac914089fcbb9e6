// Package chartcheck bounds what a bundle's Helm chart may cost to render. Helm renders a chart's
// templates inside the worker during Install and Upgrade, and nothing bounds that engine: a template such
// as `{{ range 1000000000 }}x{{ end }}` or `{{ repeat 200000000 "x" }}` takes gigabytes or minutes in the
// process that serves every GitRepo and every cluster. So, before Helm is asked, the very same chart is
// rendered with the very same values, release, namespace, revision, capabilities and lookups by a child
// process (the worker binary in its hidden `render-check` mode) that limits its own memory and CPU time
// first; the parent reads its answer through a size cap and kills it at a wall-clock limit. A chart that
// goes past a limit is refused with a LimitError naming the chart and the limit.
//
// Lookups: the child talks to the cluster with the worker's own kubeconfig, confined to the namespace
// agentclient confines the install's lookups to, so a chart that branches on what `lookup` finds renders
// in the check as it will in the install; a check that could not see what the install sees could be
// passed by a chart that is a bomb only where a lookup finds something. What stays out of reach is an
// object created or deleted in the moment between the check and the install.
package chartcheck

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"

	"helm.sh/helm/v3/pkg/chart"

	"github.com/flotilla-gitops/flotilla/agentclient"
	"github.com/flotilla-gitops/flotilla/fleet"
	"github.com/flotilla-gitops/flotilla/internal/kubeconfigsecret"
	"github.com/flotilla-gitops/flotilla/inventory"
)

// InventoryReader reads the cluster inventory, where a cluster's kubeconfig is named
// (activities.TemporalInventory in the worker).
type InventoryReader interface {
	Read(ctx context.Context) (inventory.Inventory, error)
}

// Checker runs checks in children of this process. A nil *Checker checks nothing (tests that call
// activities in-process run without one). It is safe for concurrent use.
type Checker struct {
	executable string
	inventory  InventoryReader
	limits     Limits
	slots      chan struct{}
	outcomes   *outcomes
	// local, set by NewLocal, is the one cluster every check renders against (a flotilla-agent's own).
	local *clusterAccess
	// started counts children started, so tests can tell a cached outcome from a new check.
	started atomic.Int64
	// secrets reads the kubeconfig of a cluster registered with spec.kubeConfigSecret.
	secrets *kubeconfigsecret.Source
}

// WithKubeconfigSecrets makes the Checker read the kubeconfigs of clusters registered with
// spec.kubeConfigSecret through s, as the worker's activities do.
func (c *Checker) WithKubeconfigSecrets(s *kubeconfigsecret.Source) *Checker {
	c.secrets = s
	return c
}

// New returns a Checker that starts executable (the worker binary, from os.Executable) in its
// render-check mode and finds clusters' kubeconfigs in inv. A nil inv renders without a cluster, as
// `helm template` does (default capabilities, lookups find nothing): for tests only.
func New(executable string, inv InventoryReader) *Checker {
	return &Checker{executable: executable, inventory: inv, limits: DefaultLimits(),
		slots: make(chan struct{}, MaxConcurrent), outcomes: newOutcomes(cacheSize)}
}

// NewLocal returns a Checker for a process that applies to one cluster only, a flotilla-agent: every
// check renders against the cluster kubeconfig (and context) reach, whatever the inventory says.
func NewLocal(executable, kubeconfig, kubeContext string) *Checker {
	c := New(executable, nil)
	c.local = &clusterAccess{Kubeconfig: kubeconfig, Context: kubeContext}
	return c
}

// Request is one Helm install or upgrade about to be made.
type Request struct {
	// Cluster is the cluster's inventory name: where its kubeconfig is found.
	Cluster string
	// ClusterDigest is the digest of the cluster's inventory entry; with DeploymentID and the revision it
	// keys the checks already made (an empty DeploymentID is never cached).
	ClusterDigest string
	DeploymentID  string
	Apply         agentclient.ApplyRequest
	// Latest is the release as observed just before: if it exists, Helm upgrades it to revision
	// Latest.Revision+1; otherwise it installs revision 1.
	Latest agentclient.ReleaseState
	// ClusterNamespace is the cluster's workspace (empty: fleet-default): a cluster name is unique only
	// within one.
	ClusterNamespace string
}

// Check renders r's chart in a bounded child and returns nil if it rendered within the limits, a
// *LimitError if it went past one, and another error (naming the chart) if Helm failed to render it or
// the check could not be made. A chart without templates (manifests and kustomize output travel in an
// empty chart) has nothing to check and costs nothing. A chart that passed or went past a limit on a
// cluster at a revision is not checked again there by this Checker.
func (c *Checker) Check(ctx context.Context, r Request) error {
	if c == nil || r.Apply.Chart == nil || !hasTemplates(r.Apply.Chart) {
		return nil
	}
	_, err := c.check(ctx, r)
	return err
}

func (c *Checker) check(ctx context.Context, r Request) (childAnswer, error) {
	name := r.Apply.Chart.Name()
	req := childRequest{Values: r.Apply.Values, Release: r.Apply.Name, Namespace: r.Apply.Namespace, Revision: 1}
	if r.Latest.Exists {
		req.Upgrade, req.Revision = true, max(r.Latest.Revision, 1)+1
	}
	key, cacheable := outcomeKey(r, req), r.DeploymentID != ""
	if cacheable {
		if err, ok := c.outcomes.get(key); ok {
			return childAnswer{}, err
		}
	}
	var err error
	if req.Files, err = chartFiles(r.Apply.Chart); err != nil {
		return childAnswer{}, err
	}
	if req.Cluster, err = c.clusterAccess(ctx, r); err != nil {
		return childAnswer{}, fmt.Errorf("chart %q: render check: %w", name, err)
	}
	select {
	case c.slots <- struct{}{}:
		defer func() { <-c.slots }()
	case <-ctx.Done():
		return childAnswer{}, fmt.Errorf("chart %q: waiting for a render check slot: %w", name, ctx.Err())
	}
	ans, err := c.run(ctx, name, req)
	if err == nil && ans.Error != "" {
		err = fmt.Errorf("chart %q: %s", name, ans.Error)
	}
	var limit *LimitError
	if cacheable && (err == nil || errors.As(err, &limit) && limit.deterministic()) {
		c.outcomes.put(key, err)
	}
	return ans, err
}

// outcomeKey identifies what a render depends on: the child's whole request, with the deployment ID
// standing for the chart's files and the values (it covers them, and the release's name and namespace),
// and the cluster's identity (its name, workspace and inventory entry) standing for how the child reaches
// it, which is only looked up for a check that is made. It is a digest of the request itself, not a list of
// its fields: a field added to the request later is in the key without anyone remembering it.
func outcomeKey(r Request, req childRequest) [32]byte {
	req.Files, req.Values, req.Cluster = nil, nil, clusterAccess{}
	b, err := json.Marshal(outcomeInputs{DeploymentID: r.DeploymentID, Cluster: r.Cluster, ClusterDigest: r.ClusterDigest,
		Workspace: fleet.Workspace(r.ClusterNamespace), Confine: r.Apply.ConfineToNamespace, Child: req})
	if err != nil {
		// Nothing of what is left can fail to encode; were it to, no outcome would be shared.
		panic(fmt.Sprintf("chartcheck: outcome key: %v", err))
	}
	return sha256.Sum256(b)
}

// outcomeInputs is what a check's outcome is keyed by (outcomeKey).
type outcomeInputs struct {
	DeploymentID  string       `json:"deploymentID"`
	Cluster       string       `json:"cluster"`
	ClusterDigest string       `json:"clusterDigest"`
	Workspace     string       `json:"workspace"`
	Confine       string       `json:"confine"`
	Child         childRequest `json:"child"`
}

func (c *Checker) clusterAccess(ctx context.Context, r Request) (clusterAccess, error) {
	if c.local != nil {
		a := *c.local
		a.Confine = r.Apply.ConfineToNamespace
		return a, nil
	}
	if c.inventory == nil {
		return clusterAccess{}, nil
	}
	inv, err := c.inventory.Read(ctx)
	if err != nil {
		return clusterAccess{}, fmt.Errorf("reading the cluster inventory: %w", err)
	}
	cl, ok := inv.Cluster(r.ClusterNamespace, r.Cluster)
	if !ok {
		return clusterAccess{}, fmt.Errorf("cluster %q is not in the inventory", fleet.DisplayName(r.ClusterNamespace, r.Cluster))
	}
	if cl.Spec.KubeConfigSecret != "" {
		source, data, err := c.secrets.ForCluster(ctx, cl)
		if err != nil {
			return clusterAccess{}, err
		}
		return clusterAccess{Kubeconfig: source, KubeconfigData: data, Context: cl.Spec.KubeConfigContext, Confine: r.Apply.ConfineToNamespace}, nil
	}
	return clusterAccess{Kubeconfig: cl.Spec.KubeConfigPath, Context: cl.Spec.KubeConfigContext, Confine: r.Apply.ConfineToNamespace}, nil
}

func hasTemplates(c *chart.Chart) bool {
	if len(c.Templates) > 0 {
		return true
	}
	for _, d := range c.Dependencies() {
		if hasTemplates(d) {
			return true
		}
	}
	return false
}
