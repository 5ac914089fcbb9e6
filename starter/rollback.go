package main

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"github.com/spf13/cobra"
	"go.temporal.io/sdk/client"

	"github.com/flotilla-gitops/flotilla/api"
)

func newRollbackCmd(g *globals) *cobra.Command {
	var in api.RollbackInput
	var to string
	var revision int
	cmd := &cobra.Command{
		Use:   "rollback [-n NAMESPACE] NAME [--cluster CLUSTER] (--to COMMIT | --revision N | --clear)",
		Short: "Put one cluster or all on an earlier deployment without a git revert, or clear that",
		Long: `Put a GitRepo's cluster (--cluster) or every cluster on an earlier commit, planned as that commit was,
without touching git: --to names the commit (a prefix of one 'flotilla history' lists), --revision the Helm
revision a deployment of the cluster made. The clusters run it (drift correction restores it, not HEAD) and
show OutOfSync, pinned, with who pinned them, until 'flotilla rollback NAME [--cluster X] --clear'. A
rollback is handed over at once, past the rollout's partitions and gates. The same as 'temporal workflow
update execute --name ` + api.UpdateRollback + `' with a full commit.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			key := g.key(args[0])
			chosen := 0
			for _, set := range []bool{to != "", revision > 0, in.Clear} {
				if set {
					chosen++
				}
			}
			if chosen != 1 {
				return fmt.Errorf("give one of --to COMMIT, --revision N or --clear")
			}
			if revision > 0 && in.Cluster == "" {
				return fmt.Errorf("--revision is a Helm revision of one cluster: give --cluster")
			}
			return g.withOwnGitRepo(key, func(ctx context.Context, c client.Client) error {
				if !in.Clear {
					var err error
					if in.Commit, err = g.earlierCommit(c, key, in.Cluster, to, revision); err != nil {
						return err
					}
				}
				var res api.RollbackResult
				if err := updateGitRepo(ctx, c, key, api.UpdateRollback, "rollback", in, &res); err != nil {
					return err
				}
				_, err := fmt.Fprintf(cmd.OutOrStdout(), "gitrepo/%s: %s\n", key, res.Message)
				return err
			})
		},
	}
	cmd.Flags().StringVar(&in.Cluster, "cluster", "", "only this cluster (default: every cluster)")
	cmd.Flags().StringVar(&to, "to", "", "the commit to go back to (a prefix of one 'flotilla history' lists, or a full commit)")
	cmd.Flags().IntVar(&revision, "revision", 0, "with --cluster: the Helm revision to go back to (its deployment's commit)")
	cmd.Flags().BoolVar(&in.Clear, "clear", false, "unpin: back to the GitRepo's commit")
	cmd.Flags().StringVar(&in.By, "by", currentUser(), "who acts, as recorded")
	cmd.Flags().StringVar(&in.Reason, "reason", "", "why, as recorded")
	return cmd
}

// earlierCommit resolves --to or --revision against the deployments the clusters' histories list; a full
// commit is taken as it is.
func (g *globals) earlierCommit(c client.Client, key api.GitRepoKey, cluster, to string, revision int) (string, error) {
	if fullCommitRE.MatchString(to) {
		return to, nil
	}
	clusters := []string{cluster}
	if cluster == "" {
		var err error
		if clusters, err = g.gitRepoClusters(c, key); err != nil {
			return "", err
		}
	}
	found := map[string]bool{}
	var order []string
	for _, name := range clusters {
		h := g.clusterHistory(c, key, name)
		if h.Error != "" {
			return "", fmt.Errorf("%s", h.Error)
		}
		for i := len(h.Deployments) - 1; i >= 0; i-- {
			d := h.Deployments[i]
			if d.Error != "" || !matchesDeployment(d, to, revision) || found[d.Commit] {
				continue
			}
			found[d.Commit] = true
			order = append(order, d.Commit)
			if revision > 0 {
				return d.Commit, nil // the latest deployment that made that revision
			}
		}
	}
	switch {
	case len(order) == 1:
		return order[0], nil
	case len(order) > 1:
		return "", fmt.Errorf("%q matches commits %s: give more of it", to, strings.Join(order, ", "))
	case revision > 0:
		return "", fmt.Errorf("cluster %q's history has no successful deployment that made Helm revision %d (flotilla history %s --cluster %s)", cluster, revision, key.Name, cluster)
	}
	return "", fmt.Errorf("commit %q is not among the successful deployments 'flotilla history %s' lists: give the full commit", to, key.Name)
}

func matchesDeployment(d api.Deployment, to string, revision int) bool {
	if revision == 0 {
		return to != "" && strings.HasPrefix(d.Commit, to)
	}
	for _, b := range d.Bundles {
		if b.Revision == revision {
			return true
		}
	}
	return false
}

var fullCommitRE = regexp.MustCompile(`^[0-9a-f]{40}([0-9a-f]{24})?$`)
