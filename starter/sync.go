package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	"go.temporal.io/sdk/client"

	"github.com/flotilla-gitops/flotilla/api"
)

// newSyncCmd polls a GitRepo now; with --allow-removal it first approves the plan the GitRepo holds
// because it would uninstall every bundle or most of its clusters.
func newSyncCmd(g *globals) *cobra.Command {
	var allowRemoval, overrideWindow bool
	var commit string
	var override api.RolloutActionInput
	cmd := &cobra.Command{
		Use:   "sync [-n NAMESPACE] NAME [--allow-removal [--commit SHA]] [--override-window [--by WHO] [--reason WHY]]",
		Short: "Poll the GitRepo's repository now (--allow-removal: approve a held plan that uninstalls)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if overrideWindow {
				if allowRemoval {
					return fmt.Errorf("--override-window and --allow-removal are two requests: run them one after the other")
				}
				return g.overrideWindow(cmd, g.key(args[0]), override)
			}
			if !allowRemoval {
				if commit != "" {
					return fmt.Errorf("--commit goes with --allow-removal")
				}
				return newSignalCmd(g, "sync", "", signalSync).RunE(cmd, args)
			}
			key := g.key(args[0])
			return g.withOwnGitRepo(key, func(ctx context.Context, c client.Client) error {
				var res api.ApproveRemovalResult
				if err := updateGitRepo(ctx, c, key, api.UpdateApproveRemoval, "approve removal", api.ApproveRemovalInput{Commit: commit}, &res); err != nil {
					return err
				}
				_, err := fmt.Fprintf(cmd.OutOrStdout(), "gitrepo/%s: approved the plan of commit %s; it applies now\n", key, api.ShortCommit(res.Commit))
				return err
			})
		},
	}
	cmd.Flags().BoolVar(&allowRemoval, "allow-removal", false, "approve the held plan that would uninstall every bundle or most clusters")
	cmd.Flags().StringVar(&commit, "commit", "", "with --allow-removal or --override-window: act only if the plan is for this commit (prefix)")
	cmd.Flags().BoolVar(&overrideWindow, "override-window", false, "let the planned commit through the GitRepo's sync windows now, until a new commit (recorded)")
	cmd.Flags().StringVar(&override.By, "by", currentUser(), "with --override-window: who acts, as recorded")
	cmd.Flags().StringVar(&override.Reason, "reason", "", "with --override-window: why, as recorded")
	return cmd
}

// overrideWindow sends the overrideWindow update: the planned commit goes through the sync windows.
func (g *globals) overrideWindow(cmd *cobra.Command, key api.GitRepoKey, in api.RolloutActionInput) error {
	in.Commit = cmd.Flag("commit").Value.String()
	return g.withOwnGitRepo(key, func(ctx context.Context, c client.Client) error {
		var res api.RolloutActionResult
		if err := updateGitRepo(ctx, c, key, api.UpdateOverrideWindow, "override window", in, &res); err != nil {
			return err
		}
		_, err := fmt.Fprintf(cmd.OutOrStdout(), "gitrepo/%s: %s\n", key, res.Message)
		return err
	})
}
