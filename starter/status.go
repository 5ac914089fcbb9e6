package main

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/sdk/client"

	"github.com/flotilla-gitops/flotilla/api"
	"github.com/flotilla-gitops/flotilla/fleet"
	"github.com/flotilla-gitops/flotilla/internal/gitrepoctl"
	"github.com/flotilla-gitops/flotilla/internal/visibility"
)

func queryStatus(ctx context.Context, c client.Client, key api.GitRepoKey) (api.GitRepoStatus, error) {
	var st api.GitRepoStatus
	v, err := c.QueryWorkflow(ctx, key.WorkflowID(), "", api.QueryStatus)
	if err != nil {
		return st, fmt.Errorf("gitrepo %q: %w", key, err)
	}
	return st, v.Get(&st)
}

// queryStatusPage is the GitRepo's status with only the clusters page selects, in full.
func queryStatusPage(ctx context.Context, c client.Client, key api.GitRepoKey, page api.StatusPageInput) (api.GitRepoStatus, error) {
	var st api.GitRepoStatus
	v, err := c.QueryWorkflow(ctx, key.WorkflowID(), "", api.QueryStatusPage, page)
	if err != nil {
		return st, fmt.Errorf("gitrepo %q: %w", key, err)
	}
	return st, v.Get(&st)
}

func newStatusCmd(g *globals) *cobra.Command {
	var wait, watch bool
	var waitTimeout time.Duration
	var page api.StatusPageInput
	cmd := &cobra.Command{
		Use:   "status [-n NAMESPACE] NAME [--cluster CLUSTER | --state STATE] [--limit N] [--after CLUSTER]",
		Short: "Show a GitRepo's status per cluster and bundle (--wait: until every cluster is Ready)",
		Long: `Show a GitRepo's status: its summary, then each cluster and bundle. A status too large for one answer
(over 1 MB, about 300 clusters of ten bundles) leaves bundle details out, then clusters, and says so;
--cluster, --state (Ready, NotReady, ErrApplied, …) and --limit show the clusters asked for in full, a page
at a time (--after: the cluster the previous page ended with).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			key := g.key(args[0])
			c, err := g.dialGitRepos()
			if err != nil {
				return err
			}
			defer c.Close()
			ctx, cancel := g.ctx()
			err = g.ownGitRepo(ctx, c, key)
			cancel()
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if page != (api.StatusPageInput{}) {
				ctx, cancel := g.ctx()
				defer cancel()
				st, err := queryStatusPage(ctx, c, key, page)
				if err != nil {
					return err
				}
				return printStatus(out, g.output, st)
			}
			if !wait && !watch {
				ctx, cancel := g.ctx()
				defer cancel()
				st, err := queryStatus(ctx, c, key)
				if err != nil {
					return err
				}
				return printStatus(out, g.output, st)
			}
			deadline := time.Now().Add(waitTimeout)
			last := ""
			for {
				ctx, cancel := g.ctx()
				st, err := queryStatus(ctx, c, key)
				cancel()
				if err == nil {
					line := progressLine(st)
					if line != last {
						fmt.Fprintf(cmd.ErrOrStderr(), "%s %s\n", time.Now().Format("15:04:05"), line)
						last = line
					}
					if wait && allReady(st) {
						return printStatus(out, g.output, st)
					}
				}
				if time.Now().After(deadline) {
					if err == nil {
						_ = printStatus(out, g.output, st)
						return &exitError{code: 3, err: fmt.Errorf("gitrepo %q not ready after %s: %s", key, waitTimeout, st.Message)}
					}
					return &exitError{code: 3, err: err}
				}
				time.Sleep(time.Second)
			}
		},
	}
	addOutputFlag(cmd, g)
	cmd.Flags().BoolVar(&wait, "wait", false, "wait until every targeted cluster is Ready")
	cmd.Flags().StringVar(&page.Cluster, "cluster", "", "only this cluster, in full")
	cmd.Flags().StringVar(&page.State, "state", "", "only the clusters in this state, in full")
	cmd.Flags().IntVar(&page.Limit, "limit", 0, fmt.Sprintf("at most this many clusters, in full (default %d with --cluster, --state or --after; at most %d)", api.DefaultStatusPage, api.MaxStatusPage))
	cmd.Flags().StringVar(&page.After, "after", "", "only the clusters after this one (the end of the previous page)")
	cmd.Flags().BoolVarP(&watch, "watch", "w", false, "print progress as it changes until --timeout")
	cmd.Flags().DurationVar(&waitTimeout, "timeout", 5*time.Minute, "how long --wait and --watch last")
	return cmd
}

func allReady(st api.GitRepoStatus) bool {
	return st.Commit != "" && st.DesiredReadyClusters > 0 && st.ReadyClusters == st.DesiredReadyClusters && st.Error == "" && st.Held == ""
}

func progressLine(st api.GitRepoStatus) string {
	return fmt.Sprintf("%s: %s (commit %s)", api.KeyOf(st.Namespace, st.Name), st.Message, api.ShortCommit(st.Commit))
}

func printStatus(w io.Writer, format string, st api.GitRepoStatus) error {
	if format != "table" && format != "" {
		return printStructured(w, format, st)
	}
	if strings.HasPrefix(st.Repo, fleet.HelmOpRepoPrefix) {
		// A HelmOp has no repository: its "commit" is the digest of its spec, and versions are per bundle.
		fmt.Fprintf(w, "HelmOp %s  spec %s  chart versions %s\nState %s: %s\n", api.KeyOf(st.Namespace, st.Name),
			api.ShortCommit(st.Commit), strings.Join(chartVersions(st), ","), st.State, st.Message)
	} else {
		fmt.Fprintf(w, "GitRepo %s  repo %s  commit %s\nState %s: %s\n", api.KeyOf(st.Namespace, st.Name), st.Repo, api.ShortCommit(st.Commit), st.State, st.Message)
	}
	for _, warning := range st.Warnings {
		fmt.Fprintf(w, "Warning: %s\n", warning)
	}
	if st.Partial != "" {
		fmt.Fprintf(w, "Partial: %s\n", st.Partial)
	}
	if st.Rollout != nil {
		fmt.Fprintf(w, "Rollout: %s\n", st.Rollout.Message)
	}
	if st.SyncWindow != "" {
		fmt.Fprintf(w, "Sync windows: %s\n", st.SyncWindow)
	}
	for _, p := range st.Pins {
		on := "every cluster"
		if len(p.Clusters) > 0 {
			on = strings.Join(p.Clusters, ", ")
		}
		fmt.Fprintf(w, "Pinned: %s on commit %s by %s%s (flotilla rollback --clear)\n", on, api.ShortCommit(p.Commit), p.By,
			map[bool]string{true: ": " + p.Reason}[p.Reason != ""])
	}
	fmt.Fprintln(w)
	tw := tabWriter(w)
	fmt.Fprintln(tw, "CLUSTER\tBUNDLE\tSTATE\tREADY\tMESSAGE")
	for _, c := range st.Clusters {
		fmt.Fprintf(tw, "%s\t\t%s\t%d/%d\t%s\n", c.Name, c.State, c.ResourceCounts.Ready, c.ResourceCounts.DesiredReady, oneLine(c.Message))
		for _, b := range c.Bundles {
			fmt.Fprintf(tw, "\t%s\t%s\t%d/%d\t%s\n", b.Name, b.State, b.ResourceCounts.Ready, b.ResourceCounts.DesiredReady, oneLine(b.Message))
		}
	}
	for _, c := range st.Removing {
		// No longer targeted: shown until the uninstall there is done, never counted as desired.
		fmt.Fprintf(tw, "%s (removing)\t\t%s\t\t%s\n", c.Name, c.State, oneLine(c.Message))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if st.Next != "" {
		_, err := fmt.Fprintf(w, "\nMore clusters follow: --after %s\n", st.Next)
		return err
	}
	return nil
}

func oneLine(s string) string { return strings.ReplaceAll(s, "\n", " ") }

func newGetCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "get", Short: "List resources"}
	var all bool
	list := &cobra.Command{
		Use:     "gitrepos",
		Aliases: []string{"gitrepo"},
		Short:   "List the GitRepos of a workspace (-n, default fleet-default; -A: every workspace) with their state, ready clusters and commit",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return g.withRows(all, func(_ context.Context, _ client.Client, rows []gitRepoRow) error {
				rows = onlyHelmOps(rows, false)
				if g.output != "table" && g.output != "" {
					return printStructured(cmd.OutOrStdout(), g.output, rows)
				}
				lines := make([]rowLine, len(rows))
				for i, r := range rows {
					lines[i] = rowLine{r.Namespace, []string{r.Name, r.Repo, r.State, r.Ready, api.ShortCommit(r.Commit)}}
				}
				return writeRows(cmd.OutOrStdout(), all, "NAME\tREPO\tSTATE\tREADY\tCOMMIT", lines)
			})
		},
	}
	addOutputFlag(list, g)
	addAllNamespacesFlag(list, &all)
	cmd.AddCommand(list, newGetHelmOpsCmd(g))
	return cmd
}

// withRows runs fn on the running GitRepo workflows of the workspace (every workspace with all).
func (g *globals) withRows(all bool, fn func(context.Context, client.Client, []gitRepoRow) error) error {
	c, err := g.dialGitRepos()
	if err != nil {
		return err
	}
	defer c.Close()
	ctx, cancel := g.ctx()
	defer cancel()
	rows, err := listGitRepos(ctx, c, g.taskQueue, func(k api.GitRepoKey) bool { return all || k.Namespace == g.workspace() })
	if err != nil {
		return err
	}
	return fn(ctx, c, rows)
}

// rowLine is one line of a listing: its namespace, shown with -A, and its columns.
type rowLine struct {
	namespace string
	columns   []string
}

// writeRows prints a listing as a table, with a NAMESPACE column first when it spans every workspace.
func writeRows(w io.Writer, all bool, header string, lines []rowLine) error {
	tw := tabWriter(w)
	if all {
		fmt.Fprint(tw, "NAMESPACE\t")
	}
	fmt.Fprintln(tw, header)
	for _, l := range lines {
		if all {
			fmt.Fprintf(tw, "%s\t", l.namespace)
		}
		fmt.Fprintln(tw, strings.Join(l.columns, "\t"))
	}
	return tw.Flush()
}

// gitRepoRow is one GitRepo of `get gitrepos`, from its search attributes.
type gitRepoRow struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Repo      string `json:"repo"`
	State     string `json:"state"`
	Ready     string `json:"ready"`
	Commit    string `json:"commit"`
}

// listGitRepos lists the running GitRepos of the installation on taskQueue that keep accepts, sorted by
// namespace and name. The workspace comes from the workflow ID, which every run has: runs started before
// workspaces existed lack FlotillaNamespace until they continue as new.
func listGitRepos(ctx context.Context, c client.Client, taskQueue string, keep func(api.GitRepoKey) bool) ([]gitRepoRow, error) {
	rows := []gitRepoRow{}
	err := visibility.Each(ctx, c, api.RunningGitReposQuery(taskQueue), 0, func(e *workflowpb.WorkflowExecutionInfo) error {
		key, ok := api.ParseGitRepoWorkflowID(e.GetExecution().GetWorkflowId())
		if !ok || !keep(key) {
			return nil
		}
		get := func(attr string) string { return visibility.Keyword(e, attr) }
		rows = append(rows, gitRepoRow{Namespace: key.Namespace, Name: key.Name, Repo: get(api.SearchAttrRepo), State: get(api.SearchAttrState),
			Ready: get(api.SearchAttrReady), Commit: get(api.SearchAttrCommit)})
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(rows, func(i, j int) bool {
		if rows[i].Namespace != rows[j].Namespace {
			return rows[i].Namespace < rows[j].Namespace
		}
		return rows[i].Name < rows[j].Name
	})
	return rows, nil
}

type signalKind string

const (
	signalSync   signalKind = api.SignalSync
	signalPause  signalKind = api.SignalPause
	signalResume signalKind = api.SignalResume
	signalDelete signalKind = api.SignalDelete
)

func newSignalCmd(g *globals, verb, short string, sig signalKind) *cobra.Command {
	return &cobra.Command{
		Use:   verb + " [-n NAMESPACE] NAME",
		Short: short,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			key := g.key(args[0])
			return g.withOwnGitRepo(key, func(ctx context.Context, c client.Client) error {
				// A GitRepo object in a management cluster declares its paused state and existence: the
				// controller would undo a pause or start a deleted GitRepo again. A sync changes nothing it declares.
				if sig != signalSync {
					if err := gitrepoctl.Steer(ctx, c, g.taskQueue, key, ""); err != nil {
						return err
					}
				}
				if err := c.SignalWorkflow(ctx, key.WorkflowID(), "", string(sig), nil); err != nil {
					return fmt.Errorf("gitrepo %q: %w", key, err)
				}
				_, err := fmt.Fprintf(cmd.OutOrStdout(), "gitrepo/%s: %s requested\n", key, verb)
				return err
			})
		},
	}
}
