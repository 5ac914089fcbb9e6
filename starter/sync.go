package main

import (
	"fmt"

	"github.com/spf13/cobra"
	"go.temporal.io/sdk/client"

	"github.com/flotilla-gitops/flotilla/api"
)

// newSyncCmd polls a GitRepo now; with --allow-removal it first approves the plan the GitRepo holds
// because it would uninstall every bundle or most of its clusters.
func newSyncCmd(g *globals) *cobra.Command {
	var allowRemoval bool
	var commit string
	cmd := &cobra.Command{
		Use:   "sync [-n NAMESPACE] NAME [--allow-removal [--commit SHA]]",
		Short: "Poll the GitRepo's repository now (--allow-removal: approve a held plan that uninstalls)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !allowRemoval {
				if commit != "" {
					return fmt.Errorf("--commit goes with --allow-removal")
				}
				return newSignalCmd(g, "sync", "", signalSync).RunE(cmd, args)
			}
			key := g.key(args[0])
			c, err := g.dialGitRepos()
			if err != nil {
				return err
			}
			defer c.Close()
			ctx, cancel := g.ctx()
			defer cancel()
			if err := g.ownGitRepo(ctx, c, key); err != nil {
				return err
			}
			h, err := c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
				WorkflowID: key.WorkflowID(), UpdateName: api.UpdateApproveRemoval,
				Args: []any{api.ApproveRemovalInput{Commit: commit}}, WaitForStage: client.WorkflowUpdateStageCompleted,
			})
			if err != nil {
				return fmt.Errorf("gitrepo %q: %w", key, err)
			}
			var res api.ApproveRemovalResult
			if err := h.Get(ctx, &res); err != nil {
				return fmt.Errorf("gitrepo %q: %w", key, err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "gitrepo/%s: approved the plan of commit %s; it applies now\n", key, api.ShortCommit(res.Commit))
			return nil
		},
	}
	cmd.Flags().BoolVar(&allowRemoval, "allow-removal", false, "approve the held plan that would uninstall every bundle or most clusters")
	cmd.Flags().StringVar(&commit, "commit", "", "with --allow-removal: approve only if the held plan is for this commit (prefix)")
	return cmd
}
