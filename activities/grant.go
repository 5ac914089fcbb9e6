package activities

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/flotilla-gitops/flotilla/api"
	"github.com/flotilla-gitops/flotilla/fleet"
	"github.com/flotilla-gitops/flotilla/internal/agentkey"
	"github.com/flotilla-gitops/flotilla/render"
)

// What binds an agent to its own cluster (ADR 26). The management side holds the installation key; every
// agent-mode cluster's key is derived from it, and its agent holds that key alone. Packages travel sealed
// to the cluster's key, so they open nowhere else; the renderings an agent acts on, and every removal it
// makes, carry the management side's grant under that key, so an agent acts on nothing another principal
// of the Temporal namespace queued. An installation without a key, and an agent without one, work as
// before: nothing is sealed and nothing is checked.

// The kinds of grant.
const (
	grantPrepared = "flotilla prepared v1"
	grantRemoval  = "flotilla removal v1"
	grantAgent    = "flotilla agent release v1"
	sealContent   = "flotilla content v1"
)

// clusterIdentity is what every grant and seal names first: whose cluster, and for which GitRepo.
type clusterIdentity struct {
	Workspace string `json:"workspace"`
	GitRepo   string `json:"gitRepo,omitempty"`
	Cluster   string `json:"cluster"`
}

func identityOf(t api.ClusterTarget) clusterIdentity {
	return clusterIdentity{Workspace: fleet.Workspace(t.Namespace), GitRepo: t.GitRepo, Cluster: t.Cluster}
}

// grantMessage is the canonical encoding of what a grant covers.
func grantMessage(parts ...any) []byte {
	b, err := json.Marshal(parts)
	if err != nil {
		// Every part is plain data of this package's making.
		panic(fmt.Sprintf("grant message: %v", err))
	}
	return b
}

// clusterKey is the key of a cluster on the management side: derived from the installation's.
func (a *Activities) clusterKey(workspace, cluster string) (agentkey.Key, bool) {
	if a.InstallationKey.IsZero() {
		return agentkey.Key{}, false
	}
	return a.InstallationKey.ForCluster(workspace, cluster), true
}

// grantPreparedFor is the grant of a Prepare result, empty without an installation key.
func (a *Activities) grantPreparedFor(t api.ClusterTarget, generation int64, bundles []api.PreparedBundle) string {
	k, ok := a.clusterKey(t.Namespace, t.Cluster)
	if !ok {
		return ""
	}
	return k.Grant(grantPrepared, preparedMessage(t, generation, bundles))
}

// preparedMessage is what a grant of renderings covers. No bundles and an empty list are the same: payloads
// drop an empty list on the way.
func preparedMessage(t api.ClusterTarget, generation int64, bundles []api.PreparedBundle) []byte {
	if bundles == nil {
		bundles = []api.PreparedBundle{}
	}
	return grantMessage(identityOf(t), generation, bundles)
}

// GrantRemoval grants the removal of a GitRepo from an agent-mode cluster, on the management side: the
// cluster workflow asks for it (a local activity) before its agent uninstalls.
func (a *Activities) GrantRemoval(_ context.Context, in api.GrantRemovalInput) (string, error) {
	k, ok := a.clusterKey(in.Uninstall.Namespace, in.Uninstall.Cluster)
	if !ok {
		return "", nil
	}
	return k.Grant(grantRemoval, removalMessage(in.Uninstall)), nil
}

func removalMessage(in api.UninstallInput) []byte {
	id := clusterIdentity{Workspace: fleet.Workspace(in.Namespace), GitRepo: in.GitRepo, Cluster: in.Cluster}
	return grantMessage(id, in.Generation, in.KeepResources, in.DeleteNamespace, in.Sweep)
}

// agentGuard is an agent's side of the binding: its cluster's key, and the newest generation it acted on
// for each GitRepo, so a grant recorded in a workflow's history cannot be replayed to take the cluster
// back to an older desired state. The marks live as long as the agent process.
type agentGuard struct {
	key  agentkey.Key
	mu   sync.Mutex
	mark map[api.GitRepoKey]int64
}

// verify checks a grant of kind what over message. An agent without a key checks nothing.
func (g *agentGuard) verify(what string, message []byte, grant string) error {
	if g == nil || g.key.IsZero() {
		return nil
	}
	if err := g.key.Verify(what, message, grant); err != nil {
		return temporal.NewNonRetryableApplicationError("refusing a task this agent cannot trust: "+err.Error(), api.ErrTypeNotGranted, nil)
	}
	return nil
}

// act checks that generation is not older than what the agent acted on for key, and records it.
func (g *agentGuard) act(key api.GitRepoKey, generation int64) error {
	if g == nil || g.key.IsZero() {
		return nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if generation < g.mark[key] {
		return temporal.NewNonRetryableApplicationError(fmt.Sprintf("refusing desired state %d of GitRepo %s: this agent acted on %d already",
			generation, key, g.mark[key]), api.ErrTypeStale, nil)
	}
	if g.mark == nil {
		g.mark = map[api.GitRepoKey]int64{}
	}
	g.mark[key] = generation
	return nil
}

// keptByGrant is the sweep an agent makes: it keeps, besides what the task says, every release of the
// granted renderings and every bundle that did not render, so a task can make it keep more, never remove
// what the management side's desired state has. The management worker sweeps as told.
func (a *Activities) keptByGrant(s api.Sweep, prepared []api.PreparedBundle) api.Sweep {
	if a.Local == nil || a.Local.Key.IsZero() {
		return s
	}
	s.Releases = append([]api.ReleaseRef(nil), s.Releases...)
	s.KeepBundles = append([]string(nil), s.KeepBundles...)
	for _, p := range prepared {
		rel, err := render.UnmarshalSummary(p.Release)
		if p.Error != "" || err != nil {
			s.KeepBundles = append(s.KeepBundles, p.Bundle)
			continue
		}
		if rel.Deploy {
			s.Releases = append(s.Releases, api.ReleaseRef{Bundle: p.Bundle, Namespace: rel.Namespace, Name: rel.Name})
		}
	}
	return s
}

// grantedUninstall checks, on an agent, that an uninstall is the management side's: a sweep of granted
// renderings (it keeps their releases), or a removal it granted; and not older than what the agent acted on.
func (a *Activities) grantedUninstall(t api.ClusterTarget, in api.UninstallInput) error {
	g := a.Local.guarded()
	var err error
	if in.Sweep != nil {
		err = g.verify(grantPrepared, preparedMessage(t, in.Generation, in.Prepared), in.Grant)
	} else {
		err = g.verify(grantRemoval, removalMessage(in), in.Grant)
	}
	if err != nil {
		return err
	}
	return g.act(t.Key(), in.Generation)
}

// forget drops the mark of a GitRepo removed from the cluster: one of the same name added later starts
// its generations anew.
func (g *agentGuard) forget(key api.GitRepoKey) {
	if g == nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.mark, key)
}

func agentReleaseMessage(workspace, cluster, namespace, digest, manifests string) []byte {
	return grantMessage(clusterIdentity{Workspace: fleet.Workspace(workspace), Cluster: cluster}, namespace, digest, manifests)
}

// ContentAAD is what the bytes of a ContentWorkflow's answer are sealed to, besides the cluster's key: the
// cluster and the chunks asked for, so an answer cannot pass for another cluster's or another request's.
func ContentAAD(workspace, cluster string, chunks []api.ContentChunk) []byte {
	return grantMessage(sealContent, fleet.Workspace(workspace), cluster, chunks)
}

// TemporalTargets reads a cluster's desired state from its cluster workflow (QueryTarget).
type TemporalTargets struct{ Client client.Client }

// Target is the target cluster's workflow holds now for key's GitRepo.
func (t TemporalTargets) Target(ctx context.Context, key api.GitRepoKey, cluster string) (api.ClusterTarget, error) {
	v, err := t.Client.QueryWorkflow(ctx, key.ClusterWorkflowID(cluster), "", api.QueryTarget)
	if err != nil {
		return api.ClusterTarget{}, err
	}
	var target api.ClusterTarget
	err = v.Get(&target)
	return target, err
}

// DiffTarget is the target key's GitRepo workflow planned for cluster in its last diff of another commit
// (api.QueryDiffTarget).
func (t TemporalTargets) DiffTarget(ctx context.Context, key api.GitRepoKey, cluster string) (api.ClusterTarget, error) {
	v, err := t.Client.QueryWorkflow(ctx, key.WorkflowID(), "", api.QueryDiffTarget, api.DiffTargetInput{Cluster: cluster})
	if err != nil {
		return api.ClusterTarget{}, err
	}
	var target api.ClusterTarget
	err = v.Get(&target)
	return target, err
}
