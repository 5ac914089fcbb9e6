package main

import (
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/flotilla-gitops/flotilla/api"
)

// clusterHistory is one cluster's deployments, as `flotilla history -o json` prints them.
type clusterHistory struct {
	Cluster     string           `json:"cluster"`
	Deployments []api.Deployment `json:"deployments"`
	// Error says why the cluster's history could not be read (its workflow is gone, say).
	Error string `json:"error,omitempty"`
}

func newHistoryCmd(g *globals) *cobra.Command {
	var cluster string
	cmd := &cobra.Command{
		Use:   "history [-n NAMESPACE] NAME [--cluster CLUSTER]",
		Short: "Show a GitRepo's last deployments on each cluster: when, commit, chart version, Helm revision, result, duration",
		Long: `Show a GitRepo's last deployments on each of its clusters, oldest first: when each apply started, the
commit, and for every bundle its action, chart version, Helm revision and error. Each cluster workflow keeps
its last ` + fmt.Sprint(api.HistoryLength) + ` deployments in its own state, across continue-as-new; the same failure retried is one
deployment with its attempts counted.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := g.dial()
			if err != nil {
				return err
			}
			defer c.Close()
			key := g.key(args[0])
			clusters := []string{cluster}
			if cluster == "" {
				if clusters, err = g.gitRepoClusters(c, key); err != nil {
					return err
				}
			}
			var out []clusterHistory
			for _, name := range clusters {
				out = append(out, g.clusterHistory(c, key, name))
			}
			if g.output != "table" && g.output != "" {
				return printStructured(cmd.OutOrStdout(), g.output, out)
			}
			if err := printHistory(cmd.OutOrStdout(), out); err != nil {
				return err
			}
			ctx, cancel := g.ctx()
			defer cancel()
			if st, err := queryStatus(ctx, c, key); err == nil && len(st.Events) > 0 {
				// Who approved, paused, aborted or rolled back, beside what was deployed.
				fmt.Fprintln(cmd.OutOrStdout(), "\nSteps taken (status -o json: events):")
				printEvents(cmd.OutOrStdout(), st.Events)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&cluster, "cluster", "", "only this cluster")
	addOutputFlag(cmd, g)
	return cmd
}

// gitRepoClusters are the clusters a GitRepo's status lists, planned or being removed, in name order.
func (g *globals) gitRepoClusters(c client.Client, key api.GitRepoKey) ([]string, error) {
	ctx, cancel := g.ctx()
	defer cancel()
	st, err := queryStatus(ctx, c, key)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, cs := range append(st.Clusters, st.Removing...) {
		names = append(names, cs.Name)
	}
	sort.Strings(names)
	return names, nil
}

func (g *globals) clusterHistory(c client.Client, key api.GitRepoKey, cluster string) clusterHistory {
	h := clusterHistory{Cluster: cluster, Deployments: []api.Deployment{}}
	ctx, cancel := g.ctx()
	defer cancel()
	v, err := c.QueryWorkflow(ctx, key.ClusterWorkflowID(cluster), "", api.QueryHistory)
	var nf *serviceerror.NotFound
	switch {
	case errors.As(err, &nf):
		h.Error = fmt.Sprintf("gitrepo %q has no workflow on cluster %q", key, cluster)
	case err != nil:
		h.Error = fmt.Sprintf("cluster %q: reading its history: %v", cluster, err)
	default:
		if err := v.Get(&h.Deployments); err != nil {
			h.Error = fmt.Sprintf("cluster %q: reading its history: %v", cluster, err)
		}
	}
	return h
}

func printHistory(w io.Writer, hs []clusterHistory) error {
	tw := tabWriter(w)
	fmt.Fprintln(tw, "CLUSTER\tSTARTED\tCOMMIT\tBUNDLE\tACTION\tCHART\tREVISION\tRESULT\tSECONDS")
	for _, h := range hs {
		if h.Error != "" {
			fmt.Fprintf(tw, "%s\t-\t-\t-\t-\t-\t-\t%s\t-\n", h.Cluster, h.Error)
			continue
		}
		for _, d := range h.Deployments {
			started := d.At.Local().Format("2006-01-02 15:04:05")
			if d.Error != "" {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t-\t-\t-\t%s\t%.1f\n", h.Cluster, started, api.ShortCommit(d.Commit),
					bundleNames(d.Bundles), result(d.Error, d.Attempts), d.Seconds)
				continue
			}
			for _, b := range d.Bundles {
				chart, revision := dash(b.ChartVersion), "-"
				if b.Revision > 0 {
					revision = fmt.Sprint(b.Revision)
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%.1f\n", h.Cluster, started, api.ShortCommit(d.Commit), b.Bundle,
					b.Action, chart, revision, result(b.Error, d.Attempts), d.Seconds)
			}
		}
	}
	return tw.Flush()
}

func bundleNames(bs []api.DeployedBundle) string {
	names := make([]string, 0, len(bs))
	for _, b := range bs {
		names = append(names, b.Bundle)
	}
	return strings.Join(names, ",")
}

// result is a bundle's outcome as the table shows it: ok, or its error's first line, with the attempts of a
// failure retried.
func result(errMsg string, attempts int) string {
	if errMsg == "" {
		return "ok"
	}
	line, _, _ := strings.Cut(errMsg, "\n")
	if attempts > 1 {
		return fmt.Sprintf("failed ×%d: %s", attempts, line)
	}
	return "failed: " + line
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
