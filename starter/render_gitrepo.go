package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"go.temporal.io/sdk/client"

	"github.com/flotilla-gitops/flotilla/api"
	"github.com/flotilla-gitops/flotilla/fleet"
	"github.com/flotilla-gitops/flotilla/fleet/plan"
	"github.com/flotilla-gitops/flotilla/internal/chartload"
	"github.com/flotilla-gitops/flotilla/internal/credentials"
	"github.com/flotilla-gitops/flotilla/internal/gitcache"
	"github.com/flotilla-gitops/flotilla/inventory"
	"github.com/flotilla-gitops/flotilla/render"
)

// renderGitRepo previews a running GitRepo at its current commit for every cluster of the inventory it
// targets, all of its own workspace: the same discovery, targeting and rendering as the worker's Plan and
// Observe, with no cluster contacted.
func renderGitRepo(cmd *cobra.Command, g *globals, f *renderFlags) error {
	c, err := g.dial()
	if err != nil {
		return err
	}
	defer c.Close()
	key := g.key(f.gitRepo)
	gr, commit, inv, err := readGitRepo(g, c, key)
	if err != nil {
		return err
	}
	if _, ok := inv.Cluster(key.Namespace, f.cluster); f.cluster != "" && !ok {
		return fmt.Errorf("cluster %q is not registered", fleet.DisplayName(key.Namespace, f.cluster))
	}
	dir, cleanup, err := checkout(cmd.Context(), f, key.Namespace, gr.Spec, commit)
	if err != nil {
		return err
	}
	defer cleanup()
	// Planned as the worker plans: a bundle that does not load shows its error on every cluster the GitRepo
	// targets (the worker keeps it where it ran before, which a preview cannot know).
	bundles, err := plan.Load(dir, gr.Metadata.Name, gr.Spec.Paths, gr.Spec.Targets)
	if err != nil {
		return fmt.Errorf("gitrepo %q at commit %s: %w", key, api.ShortCommit(commit), err)
	}
	for _, w := range plan.Warnings(bundles) {
		fmt.Fprintf(cmd.ErrOrStderr(), "WARN %s\n", w)
	}

	secrets, err := credentials.LoadFlags(f.credentials, f.gitCredentials)
	if err != nil {
		return err
	}
	charts := chartLoader(cmd.Context(), key.Namespace, api.ChartAccessOf(gr.Spec),
		chartload.TLS{CABundle: gr.Spec.CABundle, InsecureSkipTLSVerify: gr.Spec.InsecureSkipTLSVerify}, secrets)
	// The worker's own decisions: which clusters each bundle reaches (leaving clusters never), and the
	// target each cluster is delivered, from which every bundle's render input is built.
	refs, deps := api.BundleRefsOf(key, bundles)
	targeted := inv.TargetedBy(key.Namespace, bundles)
	if f.cluster != "" {
		var only []inventory.Targeted
		for _, tc := range targeted {
			if tc.Cluster.Metadata.Name == f.cluster {
				only = append(only, tc)
			}
		}
		if len(only) == 0 {
			return fmt.Errorf("gitrepo %q does not target cluster %q", key, f.cluster)
		}
		targeted = only
	}
	var results []clusterResult
	for _, tc := range targeted {
		pc := api.PlannedCluster{Name: tc.Cluster.Metadata.Name, Digest: tc.Digest, Bundles: tc.Bundles, Agent: tc.Cluster.Spec.Agent != nil}
		t := api.TargetOf(key, gr.Spec, commit, pc, refs)
		res := clusterResult{Cluster: pc.Name, Bundles: []bundleResult{}}
		for j, i := range tc.Bundles {
			b := bundles[i]
			if b.Err != nil {
				res.Bundles = append(res.Bundles, bundleResult{Bundle: b.Ref.Name, Path: b.Ref.Path, Error: b.Err.Error()})
				continue
			}
			res.Bundles = append(res.Bundles, renderBundle(render.InputFor(t, t.Bundles[j], dir, b.Bundle, tc.Info, charts), gr.Spec.Paused))
		}
		withDependsOn(&res, bundles, deps)
		results = append(results, res)
	}
	if results == nil {
		results = []clusterResult{}
	}
	if err := writeResults(cmd.OutOrStdout(), f.output, results, true); err != nil {
		return err
	}

	stderr := cmd.ErrOrStderr()
	var failed []string
	for _, r := range results {
		if errs := r.errors(); len(errs) > 0 {
			failed = append(failed, r.Cluster)
			fmt.Fprintf(stderr, "FAIL cluster %q: %s\n", r.Cluster, oneLine(strings.Join(errs, "; ")))
			continue
		}
		fmt.Fprintf(stderr, "PASS cluster %q: %s, %s\n", r.Cluster, plural(len(r.Bundles), "bundle"), plural(r.objectCount(), "object"))
	}
	if len(results) == 0 {
		fmt.Fprintf(stderr, "gitrepo %q targets no registered cluster of namespace %s\n", key, key.Namespace)
	}
	if len(failed) > 0 {
		return fmt.Errorf("gitrepo %q at commit %s: %d of %d clusters fail to render: %s",
			key, api.ShortCommit(commit), len(failed), len(results), strings.Join(failed, ", "))
	}
	return nil
}

func plural(n int, what string) string {
	if n == 1 {
		return fmt.Sprintf("1 %s", what)
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// readGitRepo reads the GitRepo's spec and current commit from its workflow, and the cluster inventory.
func readGitRepo(g *globals, c client.Client, key api.GitRepoKey) (fleet.GitRepo, string, inventory.Inventory, error) {
	var gr fleet.GitRepo
	var inv inventory.Inventory
	ctx, cancel := g.ctx()
	defer cancel()
	if err := g.ownGitRepo(ctx, c, key); err != nil {
		return gr, "", inv, err
	}
	v, err := c.QueryWorkflow(ctx, key.WorkflowID(), "", api.QuerySpec)
	if err != nil {
		return gr, "", inv, fmt.Errorf("gitrepo %q: reading its spec: %w", key, err)
	}
	if err := v.Get(&gr); err != nil {
		return gr, "", inv, fmt.Errorf("gitrepo %q: reading its spec: %w", key, err)
	}
	st, err := queryStatus(ctx, c, key)
	if err != nil {
		return gr, "", inv, err
	}
	if st.Commit == "" {
		msg := "it has no commit yet"
		if st.Error != "" {
			msg += ": " + st.Error
		}
		return gr, "", inv, fmt.Errorf("gitrepo %q: %s", key, msg)
	}
	if inv, err = g.readInventory(ctx, c); err != nil {
		return gr, "", inv, err
	}
	return gr, st.Commit, inv, nil
}

// checkout clones the repository at commit with the worker's git cache, into --cache-dir or a temporary
// folder that cleanup removes.
func checkout(ctx context.Context, f *renderFlags, workspace string, spec fleet.GitRepoSpec, commit string) (string, func(), error) {
	if spec.HelmOp != nil {
		return helmOpCheckout(spec.HelmOp)
	}
	cleanup := func() {}
	cacheDir := f.cacheDir
	if cacheDir == "" {
		tmp, err := os.MkdirTemp("", "flotilla-render-")
		if err != nil {
			return "", nil, err
		}
		cacheDir = tmp
		cleanup = func() { _ = os.RemoveAll(tmp) }
	}
	creds, err := credentials.LoadFlags(f.credentials, f.gitCredentials)
	if err != nil {
		cleanup()
		return "", nil, err
	}
	// The CLI renders for the user who runs it, from repositories they name: a folder of theirs is fine.
	cache := &gitcache.Cache{Dir: cacheDir, Creds: creds, AllowLocal: true}
	dir, err := cache.Checkout(ctx, gitcache.Remote{URL: spec.Repo, Workspace: workspace, Secret: spec.ClientSecretName, CABundle: spec.CABundle,
		InsecureSkipTLSVerify: spec.InsecureSkipTLSVerify}, commit)
	if err != nil {
		cleanup()
		return "", nil, err
	}
	return dir, cleanup, nil
}

// helmOpCheckout is a temporary folder holding a HelmOp's fleet.yaml, as the worker plans and renders it.
func helmOpCheckout(fy *fleet.FleetYAML) (string, func(), error) {
	data, _, err := fleet.HelmOpDocument(fy)
	if err != nil {
		return "", nil, err
	}
	tmp, err := os.MkdirTemp("", "flotilla-render-helmop-")
	if err != nil {
		return "", nil, err
	}
	cleanup := func() { _ = os.RemoveAll(tmp) }
	if err := os.WriteFile(filepath.Join(tmp, "fleet.yaml"), data, 0o644); err != nil {
		cleanup()
		return "", nil, err
	}
	return tmp, cleanup, nil
}
