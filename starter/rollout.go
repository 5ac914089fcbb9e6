package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/user"
	"strings"

	"github.com/spf13/cobra"
	"go.temporal.io/sdk/client"

	"github.com/flotilla-gitops/flotilla/api"
)

func newRolloutCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "rollout", Short: "See how a GitRepo's commit goes through the partitions of its rolloutStrategy"}
	status := &cobra.Command{
		Use:   "status [-n NAMESPACE] NAME",
		Short: "Show each partition of a GitRepo's rollout: its state, unavailable clusters and budget",
		Long: `Show how the GitRepo's planned commit goes through the partitions of its bundles' rolloutStrategy:
each partition's state (Done, RollingOut, Halted, Waiting), how many of its clusters are unavailable (not
running the commit yet, or not Ready) against its maxUnavailable, and which. A Halted partition stops the
rollout: later partitions keep the commit they run until its clusters are Ready or a new commit replaces
this one. -o json prints the status's "rollout" object, null for a GitRepo without a rolloutStrategy.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := g.dial()
			if err != nil {
				return err
			}
			defer c.Close()
			ctx, cancel := g.ctx()
			defer cancel()
			st, err := queryStatus(ctx, c, g.key(args[0]))
			if err != nil {
				return err
			}
			if g.output != "table" && g.output != "" {
				return printStructured(cmd.OutOrStdout(), g.output, st.Rollout)
			}
			return printRollout(cmd.OutOrStdout(), st)
		},
	}
	addOutputFlag(status, g)
	cmd.AddCommand(status,
		newRolloutActionCmd(g, "approve", api.UpdateRolloutApprove,
			"Let the rollout past the partition whose gate waits for approval",
			`Let the GitRepo's rollout past the partition whose gate waits for approval (rolloutStrategy partition
gate.approval). Refused, with the reason, when no partition waits, when --partition names another, or
when --commit is not the commit being rolled out. Who approved, when and why is recorded in the status
(rollout.events, the partition's approvedBy).`),
		newRolloutActionCmd(g, "pause", api.UpdateRolloutPause,
			"Stop the rollout where it stands: no cluster is handed anything new until resume",
			`Stop the GitRepo's rollout where it stands: clusters keep what they run or are applying, and no cluster
is handed a new commit or any other change until 'flotilla rollout resume'. Drift correction goes on.`),
		newRolloutActionCmd(g, "resume", api.UpdateRolloutResume,
			"Go on with a paused or aborted rollout",
			`Go on with a rollout paused or aborted: the partitions pick up where they stood.`),
		newRolloutActionCmd(g, "abort", api.UpdateRolloutAbort,
			"Give up the commit being rolled out: clusters keep what they run until a new commit",
			`Give up rolling out the planned commit: the clusters that run it keep it, the others keep what they run,
and nothing more is handed over until a new commit (which starts a new rollout) or 'flotilla rollout resume'.`),
	)
	return cmd
}

func newRolloutActionCmd(g *globals, verb, update, short, long string) *cobra.Command {
	var in api.RolloutActionInput
	cmd := &cobra.Command{
		Use:   verb + " [-n NAMESPACE] NAME",
		Short: short,
		Long:  long + "\n\nThe same as 'temporal workflow update execute --name " + update + "' on the GitRepo's workflow.",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			key := g.key(args[0])
			return g.withOwnGitRepo(key, func(ctx context.Context, c client.Client) error {
				var res api.RolloutActionResult
				if err := updateGitRepo(ctx, c, key, update, "rollout "+verb, in, &res); err != nil {
					return err
				}
				_, err := fmt.Fprintf(cmd.OutOrStdout(), "gitrepo/%s: %s\nRollout: %s\n", key, res.Message, res.Rollout.Message)
				return err
			})
		},
	}
	if verb == "approve" {
		cmd.Flags().StringVar(&in.Partition, "partition", "", "approve only if this partition is the one waiting")
	}
	cmd.Flags().StringVar(&in.Commit, "commit", "", "act only if this is the commit being rolled out (prefix)")
	cmd.Flags().StringVar(&in.By, "by", currentUser(), "who acts, as recorded")
	cmd.Flags().StringVar(&in.Reason, "reason", "", "why, as recorded")
	return cmd
}

// currentUser names the person running the CLI, for the record.
func currentUser() string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	return os.Getenv("USER")
}

func printRollout(w io.Writer, st api.GitRepoStatus) error {
	key := api.KeyOf(st.Namespace, st.Name)
	r := st.Rollout
	if r == nil {
		_, err := fmt.Fprintf(w, "GitRepo %s has no rolloutStrategy: each cluster gets commit %s as soon as the rollout window allows\n",
			key, api.ShortCommit(st.Commit))
		return err
	}
	fmt.Fprintf(w, "GitRepo %s  commit %s\nRollout: %s\nUnavailable clusters %d (%d allowed), unavailable partitions %d (%d allowed)\n\n",
		key, api.ShortCommit(st.Commit), r.Message, r.Unavailable, r.MaxUnavailable, r.UnavailablePartitions, r.MaxUnavailablePartitions)
	tw := tabWriter(w)
	fmt.Fprintln(tw, "PARTITION\tSTATE\tUNAVAILABLE\tALLOWED\tGATE\tCLUSTERS\tUNAVAILABLE CLUSTERS")
	for _, p := range r.Partitions {
		fmt.Fprintf(tw, "%s\t%s\t%d/%d\t%d\t%s\t%s\t%s\n", p.Name, p.State, p.Unavailable, p.Count, p.MaxUnavailable, gateOf(p),
			dash(strings.Join(p.Clusters, ",")), dash(strings.Join(p.UnavailableClusters, ",")))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	printEvents(w, st.Events)
	return nil
}

// printEvents lists the steps people took on a GitRepo's rollouts.
func printEvents(w io.Writer, events []api.RolloutEvent) {
	for _, e := range events {
		what := e.Action
		switch {
		case e.Partition != "":
			what += " partition " + e.Partition
		case e.Cluster != "":
			what += " cluster " + e.Cluster
		}
		fmt.Fprintf(w, "%s  %s by %s, commit %s%s\n", e.At.Local().Format("2006-01-02 15:04:05"), what, e.By, api.ShortCommit(e.Commit),
			map[bool]string{true: ": " + e.Reason}[e.Reason != ""])
	}
}

// gateOf says what a partition's gate waits for, and who opened it.
func gateOf(p api.PartitionStatus) string {
	var parts []string
	if p.Soak > 0 {
		parts = append(parts, "soak "+p.Soak.String())
	}
	if p.Approval {
		a := "approval"
		if p.ApprovedBy != nil {
			a += " (" + p.ApprovedBy.By + ")"
		}
		parts = append(parts, a)
	}
	return dash(strings.Join(parts, ", "))
}
