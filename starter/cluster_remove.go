package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"go.temporal.io/api/serviceerror"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/sdk/client"

	"github.com/flotilla-gitops/flotilla/api"
	"github.com/flotilla-gitops/flotilla/fleet"
	"github.com/flotilla-gitops/flotilla/internal/agentkeeper"
	"github.com/flotilla-gitops/flotilla/internal/searchattr"
	"github.com/flotilla-gitops/flotilla/internal/visibility"
	"github.com/flotilla-gitops/flotilla/inventory"
)

// A cluster leaves in two steps (ADR 16). The inventory first marks it leaving: no GitRepo targets it any
// more, each GitRepo that ran on it uninstalls from it while its kubeconfig is still known (or, with
// --keep-workloads, only forgets it), and `cluster list` shows it as leaving. Once no GitRepo of the
// installation holds anything there, the inventory forgets it. A cluster whose uninstall keeps failing is
// never forgotten silently: it stays leaving, and the command says which GitRepos could not uninstall and
// why.

const clusterRemoveLong = `Remove a cluster: every GitRepo uninstalls its releases from it, then the inventory forgets it.

The cluster is marked leaving at once: no GitRepo targets it any more (a removal this deliberate passes the
hold that guards against removing most of a GitRepo's clusters by mistake), each GitRepo that runs on it
uninstalls its releases there with the kubeconfig it was registered with, and 'flotilla cluster list' shows
it as leaving. The command waits until no GitRepo holds anything on the cluster, then forgets it.

A cluster that cannot be reached keeps its workloads and stays leaving; its GitRepos keep retrying, and the
command names each GitRepo that could not uninstall and why (exit code 3). Run the command again to retry
now and wait again, or add --keep-workloads to forget the cluster and leave its releases and objects in
place.

--keep-workloads: the GitRepos forget the cluster without touching it; its Helm releases and objects stay.
It needs nothing of the cluster, so at --timeout the cluster is forgotten even if a GitRepo whose repository
cannot be polled has not let go yet (that GitRepo then finds it gone and touches nothing).
--no-wait: return once the cluster is leaving; run 'flotilla cluster remove NAME' again later to wait until
its GitRepos are done and forget it.`

func newClusterRemoveCmd(g *globals) *cobra.Command {
	var keep, noWait bool
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "remove NAME [--keep-workloads] [--no-wait] [--timeout DURATION]",
		Short: "Uninstall every GitRepo from a cluster, then forget it (--keep-workloads: forget it and leave its releases and objects)",
		Long:  clusterRemoveLong,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			c, err := g.dial()
			if err != nil {
				return err
			}
			defer c.Close()
			ctx, cancel := g.ctx()
			// fleet-default is sent as no namespace, as every inventory change before workspaces was.
			ns := g.key(name).PayloadNamespace()
			res, err := g.updateInventory(ctx, c, api.UpdateLeaveCluster, inventory.LeaveInput{Name: name, Namespace: ns, KeepWorkloads: keep})
			cancel()
			if err != nil {
				return err
			}
			l, leaving, err := g.leaving(c, name)
			if err != nil {
				return err
			}
			if !leaving {
				// Forgotten by another remove meanwhile.
				fmt.Fprintf(cmd.OutOrStdout(), "cluster/%s removed\n", g.displayName(name))
				return nil
			}
			w := &leaveWaiter{g: g, c: c, cluster: l, out: cmd.ErrOrStderr()}
			if !res.Changed {
				// Run again: the uninstalls that failed retry now rather than at the end of their backoff.
				w.nudge()
			}
			if noWait {
				fmt.Fprintf(cmd.OutOrStdout(), "cluster/%s leaving: %s; run `%s` to wait until "+
					"it is done and forget the cluster\n", g.displayName(name), w.what(), g.removeCommand(name, ""))
				return nil
			}
			fmt.Fprintf(w.out, "%s cluster/%s leaving: %s\n", time.Now().Format("15:04:05"), g.displayName(name), w.what())
			holders, err := w.wait(timeout)
			if err != nil {
				return err
			}
			if len(holders) > 0 && !l.KeepWorkloads {
				return &exitError{code: 3, err: stillLeaving(g, name, timeout, holders)}
			}
			ctx, cancel = g.ctx()
			defer cancel()
			if _, err := g.updateInventory(ctx, c, api.UpdateRemoveCluster, inventory.RemoveInput{Name: name, Namespace: ns}); err != nil {
				return err
			}
			// An agent-mode cluster's AgentWorkflow ends now rather than at its next resync; the agent and its
			// release stay in the cluster, as every object of a forgotten cluster does.
			if err := agentkeeper.Check(ctx, c, g.taskQueue, ns, name); err != nil {
				return err
			}
			if len(holders) > 0 {
				// Keeping workloads needs nothing of the cluster: a GitRepo that has not let go yet (its
				// repository cannot be polled) finds it gone from the inventory and touches nothing there.
				fmt.Fprintf(w.out, "forgotten while these GitRepos still listed it (they let go at their next poll, touching nothing):\n%s",
					holderLines(holders))
			}
			suffix := ""
			if l.KeepWorkloads {
				suffix = " (its releases and objects stay)"
			}
			fmt.Fprintf(cmd.OutOrStdout(), "cluster/%s removed%s\n", g.displayName(name), suffix)
			return nil
		},
	}
	cmd.Flags().BoolVar(&keep, "keep-workloads", false, "forget the cluster without uninstalling: its Helm releases and objects stay")
	cmd.Flags().BoolVar(&noWait, "no-wait", false, "return once the cluster is leaving; run the command again later to wait and forget it")
	cmd.Flags().DurationVar(&timeout, "timeout", 5*time.Minute, "how long to wait for the GitRepos to uninstall")
	return cmd
}

// leaving reads how the named cluster is leaving; false when it is not registered (any more).
func (g *globals) leaving(c client.Client, name string) (inventory.Leaving, bool, error) {
	ctx, cancel := g.ctx()
	defer cancel()
	v, err := c.QueryWorkflow(ctx, api.InventoryWorkflowID(g.taskQueue), "", api.QueryInventory)
	if err != nil {
		return inventory.Leaving{}, false, fmt.Errorf("reading the inventory: %w", err)
	}
	var inv inventory.Inventory
	if err := v.Get(&inv); err != nil {
		return inventory.Leaving{}, false, err
	}
	l, ok := inv.LeavingCluster(g.workspace(), name)
	return l, ok, nil
}

// holder is a GitRepo, or a cluster workflow of one, that still holds something on a leaving cluster.
type holder struct {
	gitRepo string
	reason  string
}

func holderLines(hs []holder) string {
	var b strings.Builder
	for _, h := range hs {
		fmt.Fprintf(&b, "  gitrepo %q: %s\n", h.gitRepo, h.reason)
	}
	return b.String()
}

func stillLeaving(g *globals, cluster string, timeout time.Duration, hs []holder) error {
	return fmt.Errorf("cluster %q is still leaving after %s; these GitRepos have not uninstalled from it, so its workloads stay:\n%s"+
		"It stays registered as leaving and its GitRepos keep retrying. Run `%s` again to retry now and wait, "+
		"or `%s` to forget it and leave its releases and objects in place",
		g.displayName(cluster), timeout, holderLines(hs), g.removeCommand(cluster, ""), g.removeCommand(cluster, " --keep-workloads"))
}

// displayName names a cluster of the command's workspace as messages do: with its workspace outside
// fleet-default.
func (g *globals) displayName(cluster string) string { return fleet.DisplayName(g.namespace, cluster) }

// removeCommand is the command line that removes the cluster again, in its workspace.
func (g *globals) removeCommand(cluster, flags string) string {
	if g.workspace() == fleet.DefaultNamespace {
		return "flotilla cluster remove " + cluster + flags
	}
	return "flotilla cluster remove -n " + g.workspace() + " " + cluster + flags
}

// holdsCluster judges one GitRepo's status: does it still target, or still uninstall from, a cluster that
// started leaving at inventory generation since? A GitRepo that has not read that generation yet may still
// deliver to it, unless it cannot poll at all (its status has an error) and has nothing there. It is pure.
func holdsCluster(st api.GitRepoStatus, cluster string, since int64) (string, bool) {
	for _, c := range st.Removing {
		if c.Name == cluster {
			return fmt.Sprintf("%s: %s", c.State, c.Message), true
		}
	}
	for _, c := range st.Clusters {
		if c.Name == cluster {
			if st.Error != "" {
				return "still targets it: it cannot read the inventory's change: " + st.Error, true
			}
			return "still targets it: it has not planned since the cluster started leaving", true
		}
	}
	if st.InventoryGeneration < since && st.Error == "" {
		return "has not read the inventory since the cluster started leaving", true
	}
	return "", false
}

// leaveWaiter waits for the GitRepos of this installation to let go of a leaving cluster.
type leaveWaiter struct {
	g       *globals
	c       client.Client
	cluster inventory.Leaving
	out     io.Writer
	// told are cluster workflows whose GitRepo no longer runs, already told to remove.
	told map[string]bool
	// attrs caches whether Flotilla's search attributes exist on the namespace (nil: not asked yet).
	attrs *bool
}

func (w *leaveWaiter) what() string {
	if w.cluster.KeepWorkloads {
		return "its GitRepos forget it, leaving its releases and objects in place"
	}
	return "its GitRepos uninstall from it"
}

// wait polls until nothing holds the cluster or timeout passes, printing progress as it changes; it
// returns what still holds the cluster.
func (w *leaveWaiter) wait(timeout time.Duration) ([]holder, error) {
	deadline := time.Now().Add(timeout)
	last := ""
	for {
		hs, err := w.holders()
		if err == nil && len(hs) == 0 {
			return nil, nil
		}
		if err == nil {
			if line := holderLines(hs); line != last {
				fmt.Fprintf(w.out, "%s waiting for:\n%s", time.Now().Format("15:04:05"), line)
				last = line
			}
		}
		if time.Now().After(deadline) {
			if err != nil {
				return nil, &exitError{code: 3, err: fmt.Errorf("cluster %q is still leaving after %s: %w", w.cluster.Name, timeout, err)}
			}
			return hs, nil
		}
		time.Sleep(time.Second)
	}
}

// holders lists what still holds the cluster: GitRepos whose status targets it or shows its removal, and
// cluster workflows on it. A cluster workflow whose GitRepo no longer runs (it was deleted and gave up, or
// was terminated) has no one to remove it: it is told to, here.
func (w *leaveWaiter) holders() ([]holder, error) {
	ctx, cancel := w.g.ctx()
	defer cancel()
	running := map[string]bool{}
	var hs []holder
	err := visibility.Each(ctx, w.c, api.RunningGitReposQuery(w.g.taskQueue), 0, func(e *workflowpb.WorkflowExecutionInfo) error {
		key, ok := api.ParseGitRepoWorkflowID(e.GetExecution().GetWorkflowId())
		if !ok || fleet.Workspace(key.Namespace) != w.g.workspace() {
			return nil // a GitRepo of another workspace never targets this cluster
		}
		name := key.String()
		running[name] = true
		st, err := queryStatus(ctx, w.c, key)
		var nf *serviceerror.NotFound
		if errors.As(err, &nf) {
			return nil // ended meanwhile
		}
		if err != nil {
			hs = append(hs, holder{gitRepo: name, reason: err.Error()})
			return nil
		}
		if reason, holds := holdsCluster(st, w.cluster.Name, w.cluster.Generation); holds {
			hs = append(hs, holder{gitRepo: name, reason: reason})
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("listing GitRepos: %w", err)
	}
	if !w.searchAttributes(ctx) {
		return hs, nil // no Flotilla worker ever ran on this namespace: no cluster workflow can
	}
	err = visibility.Each(ctx, w.c, w.onClusterQuery(), 0, func(e *workflowpb.WorkflowExecutionInfo) error {
		id := e.GetExecution().GetWorkflowId()
		key, cluster, ok := api.ParseClusterWorkflowID(id)
		if !ok || cluster != w.cluster.Name || fleet.Workspace(key.Namespace) != w.g.workspace() {
			return nil // the same cluster name in another workspace
		}
		gitRepo := key.String()
		for _, h := range hs {
			if h.gitRepo == gitRepo {
				return nil // said already
			}
		}
		if running[gitRepo] {
			hs = append(hs, holder{gitRepo: gitRepo, reason: "its workflow on the cluster is ending"})
			return nil
		}
		if !w.told[id] {
			req := api.RemoveRequest{Forget: w.cluster.KeepWorkloads}
			if err := w.c.SignalWorkflow(ctx, id, "", api.SignalRemove, req); err != nil {
				return fmt.Errorf("workflow %s: %w", id, err)
			}
			if w.told == nil {
				w.told = map[string]bool{}
			}
			w.told[id] = true
		}
		hs = append(hs, holder{gitRepo: gitRepo, reason: "the GitRepo no longer runs; its workflow on the cluster was told to remove itself"})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("listing the cluster's workflows: %w", err)
	}
	return hs, nil
}

// nudge makes the cluster's workflows check now: a failing uninstall retries at once.
func (w *leaveWaiter) nudge() {
	ctx, cancel := w.g.ctx()
	defer cancel()
	if !w.searchAttributes(ctx) {
		return
	}
	_ = visibility.Each(ctx, w.c, w.onClusterQuery(), 0, func(e *workflowpb.WorkflowExecutionInfo) error {
		if key, cluster, ok := api.ParseClusterWorkflowID(e.GetExecution().GetWorkflowId()); !ok || cluster != w.cluster.Name ||
			fleet.Workspace(key.Namespace) != w.g.workspace() {
			return nil
		}
		// Best effort: a workflow that ends meanwhile needs no nudge.
		_ = w.c.SignalWorkflow(ctx, e.GetExecution().GetWorkflowId(), "", api.SignalCheck, nil)
		return nil
	})
}

// onClusterQuery finds the running cluster workflows on the leaving cluster; in fleet-default also those
// of same-named clusters of other workspaces, which the callers skip by their workflow IDs.
func (w *leaveWaiter) onClusterQuery() string {
	return api.RunningWorkflowsOnClusterQuery(w.g.taskQueue, w.g.workspace(), w.cluster.Name)
}

func (w *leaveWaiter) searchAttributes(ctx context.Context) bool {
	if w.attrs == nil {
		ok := searchattr.Check(ctx, searchattr.Service{Client: w.c.OperatorService()}, w.g.temporalNamespace, api.SearchAttributes) == nil
		w.attrs = &ok
	}
	return *w.attrs
}
