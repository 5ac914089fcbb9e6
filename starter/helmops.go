package main

import (
	"context"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"go.temporal.io/sdk/client"

	"github.com/flotilla-gitops/flotilla/api"
	"github.com/flotilla-gitops/flotilla/fleet"
)

// helmOpRow is one HelmOp of `get helmops`. JSON names are a contract (`get helmops -o json`).
type helmOpRow struct {
	gitRepoRow
	// Versions are the chart versions its clusters deploy, as its last poll resolved them.
	Versions []string `json:"versions"`
}

// onlyHelmOps keeps the rows of HelmOps (want) or of GitRepos (!want): both run as GitRepo workflows.
func onlyHelmOps(rows []gitRepoRow, want bool) []gitRepoRow {
	out := []gitRepoRow{}
	for _, r := range rows {
		if strings.HasPrefix(r.Repo, fleet.HelmOpRepoPrefix) == want {
			out = append(out, r)
		}
	}
	return out
}

func newGetHelmOpsCmd(g *globals) *cobra.Command {
	var all bool
	cmd := &cobra.Command{
		Use:     "helmops",
		Aliases: []string{"helmop"},
		Short:   "List the HelmOps of a workspace (-n, default fleet-default; -A: every workspace) with their state, ready clusters and chart versions",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return g.withRows(all, func(ctx context.Context, c client.Client, rows []gitRepoRow) error {
				out := []helmOpRow{}
				for _, r := range onlyHelmOps(rows, true) {
					row := helmOpRow{gitRepoRow: r, Versions: []string{}}
					if st, err := queryStatus(ctx, c, api.KeyOf(r.Namespace, r.Name)); err == nil {
						row.Versions = chartVersions(st)
					}
					out = append(out, row)
				}
				if g.output != "table" && g.output != "" {
					return printStructured(cmd.OutOrStdout(), g.output, out)
				}
				lines := make([]rowLine, len(out))
				for i, r := range out {
					lines[i] = rowLine{r.Namespace, []string{r.Name, r.State, r.Ready, strings.Join(r.Versions, ",")}}
				}
				return writeRows(cmd.OutOrStdout(), all, "NAME\tSTATE\tREADY\tVERSION", lines)
			})
		},
	}
	addOutputFlag(cmd, g)
	addAllNamespacesFlag(cmd, &all)
	return cmd
}

// chartVersions are the distinct chart versions a status shows, sorted.
func chartVersions(st api.GitRepoStatus) []string {
	seen := map[string]bool{}
	for _, c := range st.Clusters {
		for _, b := range c.Bundles {
			if b.ChartVersion != "" {
				seen[b.ChartVersion] = true
			}
		}
	}
	out := make([]string, 0, len(seen))
	for v := range seen {
		out = append(out, v)
	}
	sort.Strings(out)
	return out
}
