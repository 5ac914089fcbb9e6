package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"go.temporal.io/sdk/client"

	"github.com/flotilla-gitops/flotilla/api"
	"github.com/flotilla-gitops/flotilla/fleet"
	"github.com/flotilla-gitops/flotilla/inventory"
)

// A cluster leaves in two steps (ADR 16), and the inventory workflow decides both (ADR 29). The command
// only asks: the leaveCluster update marks the cluster leaving, no GitRepo targets it any more, and each
// GitRepo that ran on it uninstalls from it while its kubeconfig is still known (or, with --keep-workloads,
// only forgets it). The inventory forgets the cluster once no GitRepo of the installation holds anything
// there; the command waits for that through the awaitClusterRemoved update. A cluster whose uninstall keeps
// failing is never forgotten silently: it stays leaving, and the command says which GitRepos could not
// uninstall and why.

const clusterRemoveLong = `Remove a cluster: every GitRepo uninstalls its releases from it, then the inventory forgets it.

The cluster is marked leaving at once: no GitRepo targets it any more (a removal this deliberate passes the
hold that guards against removing most of a GitRepo's clusters by mistake), each GitRepo that runs on it
uninstalls its releases there with the kubeconfig it was registered with, and 'flotilla cluster list' shows
it as leaving. The inventory forgets the cluster once no GitRepo holds anything there; the command waits
for that.

A cluster that cannot be reached keeps its workloads and stays leaving; its GitRepos keep retrying, and the
command names each GitRepo that could not uninstall and why (exit code 3). Run the command again to retry
now and wait again, or add --keep-workloads to forget the cluster and leave its releases and objects in
place.

--keep-workloads: the GitRepos forget the cluster without touching it; its Helm releases and objects stay.
It needs nothing of the cluster, so at --timeout the cluster is forgotten even if a GitRepo whose repository
cannot be polled has not let go yet (that GitRepo then finds it gone and touches nothing).
--no-wait: return once the cluster is leaving; the inventory forgets it when its GitRepos are done, and
'flotilla cluster remove NAME' run again waits for that.`

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
				// Forgotten already: by this leave when it keeps the workloads and no GitRepo had to let go
				// (that takes the inventory a moment, and can beat this read), or by another remove meanwhile.
				suffix := ""
				if keep && res.Changed {
					suffix = " (its releases and objects stay)"
				}
				fmt.Fprintf(cmd.OutOrStdout(), "cluster/%s removed%s\n", g.displayName(name), suffix)
				return nil
			}
			if noWait {
				fmt.Fprintf(cmd.OutOrStdout(), "cluster/%s leaving: %s; the inventory forgets it once they are done; "+
					"run `%s` to wait for that\n", g.displayName(name), leavingWhat(l), g.removeCommand(name, ""))
				return nil
			}
			out := cmd.ErrOrStderr()
			fmt.Fprintf(out, "%s cluster/%s leaving: %s\n", time.Now().Format("15:04:05"), g.displayName(name), leavingWhat(l))
			if !res.Changed {
				fmt.Fprintf(out, "it was leaving already: its workflows check now, so a failed uninstall retries at once\n")
			}
			done, err := g.awaitRemoved(c, api.AwaitClusterRemovedInput{Name: name, Namespace: ns, Timeout: timeout}, out)
			if err != nil {
				return err
			}
			if !done.Removed {
				return &exitError{code: 3, err: stillLeaving(g, name, timeout, done)}
			}
			if len(done.Holders) > 0 {
				// Keeping workloads needs nothing of the cluster: a GitRepo that has not let go yet (its
				// repository cannot be polled) finds it gone from the inventory and touches nothing there.
				fmt.Fprintf(out, "forgotten while these GitRepos still listed it (they let go at their next poll, touching nothing):\n%s",
					holderLines(done.Holders))
			}
			suffix := ""
			if done.KeepWorkloads {
				suffix = " (its releases and objects stay)"
			}
			fmt.Fprintf(cmd.OutOrStdout(), "cluster/%s removed%s\n", g.displayName(name), suffix)
			return nil
		},
	}
	cmd.Flags().BoolVar(&keep, "keep-workloads", false, "forget the cluster without uninstalling: its Helm releases and objects stay")
	cmd.Flags().BoolVar(&noWait, "no-wait", false, "return once the cluster is leaving; the inventory forgets it when its GitRepos are done")
	cmd.Flags().DurationVar(&timeout, "timeout", 5*time.Minute, "how long to wait for the GitRepos to uninstall")
	return cmd
}

// leaving reads how the named cluster is leaving; false when it is not registered (any more).
func (g *globals) leaving(c client.Client, name string) (inventory.Leaving, bool, error) {
	ctx, cancel := g.ctx()
	defer cancel()
	inv, err := g.readInventory(ctx, c)
	if err != nil {
		return inventory.Leaving{}, false, err
	}
	l, ok := inv.LeavingCluster(g.workspace(), name)
	return l, ok, nil
}

func leavingWhat(l inventory.Leaving) string {
	if l.KeepWorkloads {
		return "its GitRepos forget it, leaving its releases and objects in place"
	}
	return "its GitRepos uninstall from it"
}

// awaitRemoved asks the inventory to answer once the cluster is forgotten, or at in.Timeout, and prints
// what still holds the cluster whenever that changes meanwhile.
func (g *globals) awaitRemoved(c client.Client, in api.AwaitClusterRemovedInput, out io.Writer) (api.AwaitClusterRemovedResult, error) {
	ctx, cancel := context.WithTimeout(context.Background(), in.Timeout+g.timeout)
	defer cancel()
	h, err := c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
		WorkflowID:   api.InventoryWorkflowID(g.taskQueue),
		UpdateName:   api.UpdateAwaitClusterRemoved,
		Args:         []any{in},
		WaitForStage: client.WorkflowUpdateStageAccepted,
	})
	if err != nil {
		return api.AwaitClusterRemovedResult{}, fmt.Errorf("waiting for cluster %q to be forgotten: %w", g.displayName(in.Name), err)
	}
	type answer struct {
		res api.AwaitClusterRemovedResult
		err error
	}
	answered := make(chan answer, 1)
	go func() {
		var a answer
		a.err = h.Get(ctx, &a.res)
		answered <- a
	}()
	last := ""
	tick := time.NewTicker(2 * time.Second)
	defer tick.Stop()
	for {
		select {
		case a := <-answered:
			if a.err != nil {
				return a.res, fmt.Errorf("waiting for cluster %q to be forgotten: %w", g.displayName(in.Name), a.err)
			}
			return a.res, nil
		case <-tick.C:
			// Progress only: a query that fails now is asked again at the next tick.
			hs, err := g.leavingHolders(ctx, c, in.Namespace, in.Name)
			if err != nil || len(hs) == 0 {
				continue
			}
			if line := holderLines(hs); line != last {
				fmt.Fprintf(out, "%s waiting for:\n%s", time.Now().Format("15:04:05"), line)
				last = line
			}
		}
	}
}

// leavingHolders reads what held a leaving cluster when the inventory last asked.
func (g *globals) leavingHolders(ctx context.Context, c client.Client, ns, name string) ([]api.Holder, error) {
	qctx, cancel := context.WithTimeout(ctx, g.timeout)
	defer cancel()
	v, err := c.QueryWorkflow(qctx, api.InventoryWorkflowID(g.taskQueue), "", api.QueryLeavingHolders)
	if err != nil {
		return nil, err
	}
	var all []api.LeavingHolders
	if err := v.Get(&all); err != nil {
		return nil, err
	}
	for _, lh := range all {
		if lh.Name == name && fleet.Workspace(lh.Namespace) == fleet.Workspace(ns) {
			return lh.Holders, nil
		}
	}
	return nil, nil
}

func holderLines(hs []api.Holder) string {
	var b strings.Builder
	for _, h := range hs {
		fmt.Fprintf(&b, "  gitrepo %q: %s\n", h.GitRepo, h.Reason)
	}
	return b.String()
}

func stillLeaving(g *globals, cluster string, timeout time.Duration, res api.AwaitClusterRemovedResult) error {
	what := holderLines(res.Holders)
	if res.Error != "" {
		what += "  (what holds it could not be listed when last asked: " + res.Error + ")\n"
	}
	return fmt.Errorf("cluster %q is still leaving after %s; these GitRepos have not uninstalled from it, so its workloads stay:\n%s"+
		"It stays registered as leaving and its GitRepos keep retrying. Run `%s` again to retry now and wait, "+
		"or `%s` to forget it and leave its releases and objects in place",
		g.displayName(cluster), timeout, what, g.removeCommand(cluster, ""), g.removeCommand(cluster, " --keep-workloads"))
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
