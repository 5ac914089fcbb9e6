package activities

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/flotilla-gitops/flotilla/api"
	"github.com/flotilla-gitops/flotilla/fleet"
	"github.com/flotilla-gitops/flotilla/internal/gitcache"
	"github.com/flotilla-gitops/flotilla/internal/metrics"
	"github.com/flotilla-gitops/flotilla/inventory"
)

// Poll resolves the commit to deploy and reads the inventory generation: one ls-remote, no clone.
func (a *Activities) Poll(ctx context.Context, in api.PollInput) (api.PollResult, error) {
	defer heartbeatEvery(ctx, 3*time.Second)()
	if err := a.Workspaces.serves(in.Key().Namespace); err != nil {
		return api.PollResult{}, err
	}
	commit, err := a.resolve(ctx, in)
	if err != nil {
		var nf *gitcache.NotFoundError
		if errors.As(err, &nf) {
			return api.PollResult{}, temporal.NewApplicationError(err.Error(), api.ErrTypeRevisionNotFound)
		}
		return api.PollResult{}, gitError(err)
	}
	inv, err := a.Inventory.Read(ctx)
	if err != nil {
		return api.PollResult{}, fmt.Errorf("reading the cluster inventory: %w", err)
	}
	return api.PollResult{Commit: commit, InventoryGeneration: inv.Generation, Leaving: leavingOf(inv, in.Key().Namespace)}, nil
}

// gitError is a failed ls-remote or clone as the workflows see it: retried, unless retrying cannot help (a
// local repository this worker refuses).
func gitError(err error) error {
	if errors.Is(err, gitcache.ErrLocalRepo) {
		return temporal.NewNonRetryableApplicationError(err.Error(), api.ErrTypeGit, nil)
	}
	return temporal.NewApplicationError(err.Error(), api.ErrTypeGit)
}

// resolve is the commit of a repository's branch or revision, or what stands for one for a HelmOp.
func (a *Activities) resolve(ctx context.Context, in api.PollInput) (string, error) {
	if in.HelmOp != nil {
		_, commit, err := fleet.HelmOpDocument(in.HelmOp)
		return commit, err
	}
	start := time.Now()
	commit, err := a.Git.Resolve(ctx, gitcache.Remote{URL: in.Repo, Workspace: in.Key().Namespace, Secret: in.ClientSecretName, CABundle: in.CABundle,
		InsecureSkipTLSVerify: in.InsecureSkipTLSVerify}, in.Branch, in.Revision)
	a.Metrics.Git(metrics.GitLsRemote, time.Since(start), err)
	return commit, err
}

// checkout is the checkout of a commit, or a HelmOp's folder holding its fleet.yaml.
func (a *Activities) checkout(ctx context.Context, r gitcache.Remote, commit string, helmOp *fleet.FleetYAML) (string, error) {
	if helmOp != nil {
		return a.helmOpCheckout(helmOp)
	}
	start := time.Now()
	dir, err := a.Git.Checkout(ctx, r, commit)
	a.Metrics.Git(metrics.GitCheckout, time.Since(start), err)
	return dir, err
}

// leavingOf is what a GitRepo of workspace ns needs to know of the inventory's leaving clusters: its own
// workspace's (a GitRepo knows its clusters by name only).
func leavingOf(inv inventory.Inventory, ns string) []api.LeavingCluster {
	var out []api.LeavingCluster
	for _, l := range inv.LeavingIn(ns) {
		out = append(out, api.LeavingCluster{Name: l.Name, KeepWorkloads: l.KeepWorkloads})
	}
	return out
}
