package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

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
	cmd.AddCommand(status)
	return cmd
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
	fmt.Fprintln(tw, "PARTITION\tSTATE\tUNAVAILABLE\tALLOWED\tCLUSTERS\tUNAVAILABLE CLUSTERS")
	for _, p := range r.Partitions {
		fmt.Fprintf(tw, "%s\t%s\t%d/%d\t%d\t%s\t%s\n", p.Name, p.State, p.Unavailable, p.Count, p.MaxUnavailable,
			dash(strings.Join(p.Clusters, ",")), dash(strings.Join(p.UnavailableClusters, ",")))
	}
	return tw.Flush()
}
