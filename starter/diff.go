package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/flotilla-gitops/flotilla/api"
)

// Exit codes of `flotilla diff`, as kubectl diff's.
const (
	diffExitChanges = 1
	diffExitFailed  = 2
)

func newDiffCmd(g *globals) *cobra.Command {
	var in api.DiffInput
	var commit string
	wait := 5 * time.Minute
	cmd := &cobra.Command{
		Use:   "diff [-n NAMESPACE] NAME [--cluster CLUSTER] [--commit COMMIT]",
		Short: "Show what the next apply would change on each cluster, object by object, against live state",
		Long: `Show what the next apply of a GitRepo would change on each of its clusters (--cluster: one), object by
object: objects created, deleted, and every field whose live value differs from what the apply sets (with
both values), compared as drift detection compares them, so no difference means no Helm revision would be
made. Each bundle says what the apply does to its release: install, upgrade, repair (correctDrift reverts
drift) or none (drift the GitRepo leaves as is, correctDrift being off, is still listed); releases of bundles
the GitRepo no longer deploys there are uninstalled.

Without --commit the diff is of what each cluster gets next: the GitRepo's commit, or the one a rollback pins
it to. --commit diffs another commit (a full one, or a prefix of one 'flotilla history' lists), planned as a
rollback to it would be. Nothing is applied: installs and upgrades are Helm server-side dry runs.

A Secret's values are shown as "***". Exit status: 0 no changes, 1 changes, 2 a cluster or bundle could not
be diffed (its error is shown), as kubectl diff.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			key := g.key(args[0])
			var out diffOutput
			err := g.withOwnGitRepo(key, func(_ context.Context, c client.Client) error {
				if commit != "" {
					var err error
					if in.Commit, err = g.diffCommit(c, key, in.Cluster, commit); err != nil {
						return err
					}
				}
				var err error
				out, err = g.diff(c, key, in, wait)
				return err
			})
			if err != nil {
				return &exitError{code: diffExitFailed, err: err}
			}
			if g.output != "table" && g.output != "" {
				if err := printStructured(cmd.OutOrStdout(), g.output, out); err != nil {
					return err
				}
			} else if err := printDiff(cmd.OutOrStdout(), key, out); err != nil {
				return err
			}
			switch {
			case out.failed():
				return &exitError{code: diffExitFailed}
			case out.changed():
				return &exitError{code: diffExitChanges}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&in.Cluster, "cluster", "", "only this cluster (default: every cluster)")
	cmd.Flags().StringVar(&commit, "commit", "", "diff this commit instead of what the clusters get next (a full commit, or a prefix 'flotilla history' lists)")
	cmd.Flags().DurationVar(&wait, "timeout", wait, "how long to wait for the clusters' answers")
	addOutputFlag(cmd, g)
	return cmd
}

// diffOutput is what `flotilla diff -o json` prints.
type diffOutput struct {
	GitRepo  string            `json:"gitRepo"`
	Commit   string            `json:"commit"`
	Paused   bool              `json:"paused,omitempty"`
	Clusters []api.ClusterDiff `json:"clusters"`
}

func (o diffOutput) changed() bool {
	for _, c := range o.Clusters {
		if c.Changed() {
			return true
		}
	}
	return false
}

func (o diffOutput) failed() bool {
	for _, c := range o.Clusters {
		if c.Failed() {
			return true
		}
	}
	return false
}

// diff asks the GitRepo for its targets a page at a time and has a DiffWorkflow diff each page.
func (g *globals) diff(c client.Client, key api.GitRepoKey, in api.DiffInput, wait time.Duration) (diffOutput, error) {
	out := diffOutput{GitRepo: key.String()}
	for {
		ctx, cancel := g.ctx()
		var targets api.DiffTargets
		err := updateGitRepo(ctx, c, key, api.UpdateDiff, "diff", in, &targets)
		cancel()
		if err != nil {
			return diffOutput{}, err
		}
		out.Commit, out.Paused = targets.Commit, targets.Paused
		if len(targets.Targets) > 0 {
			res, err := runDiff(c, key, targets, wait)
			if err != nil {
				return diffOutput{}, err
			}
			out.Clusters = append(out.Clusters, res.Clusters...)
		}
		if targets.Next == "" {
			return out, nil
		}
		in.After = targets.Next
	}
}

func runDiff(c client.Client, key api.GitRepoKey, targets api.DiffTargets, wait time.Duration) (api.DiffResult, error) {
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:                       fmt.Sprintf("%s/diff/%d", key.WorkflowID(), time.Now().UnixNano()),
		TaskQueue:                targets.TaskQueue,
		WorkflowExecutionTimeout: wait,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		StaticSummary:            fmt.Sprintf("diff of GitRepo %s at commit %s", key, api.ShortCommit(targets.Commit)),
	}, api.DiffWorkflowType, api.DiffWorkflowInput{GitRepo: key.Name, Commit: targets.Commit, Targets: targets.Targets})
	if err != nil {
		return api.DiffResult{}, fmt.Errorf("gitrepo %q: diff: %w", key, err)
	}
	var res api.DiffResult
	if err := run.Get(ctx, &res); err != nil {
		return api.DiffResult{}, fmt.Errorf("gitrepo %q: diff (workflow %s): %w", key, run.GetID(), err)
	}
	return res, nil
}

// diffCommit resolves --commit: a full commit as it is, a prefix from the commits the clusters' histories
// list and the GitRepo's own.
func (g *globals) diffCommit(c client.Client, key api.GitRepoKey, cluster, commit string) (string, error) {
	if fullCommitRE.MatchString(commit) {
		return commit, nil
	}
	ctx, cancel := g.ctx()
	defer cancel()
	if st, err := queryStatus(ctx, c, key); err == nil && commit != "" && strings.HasPrefix(st.Commit, commit) {
		return st.Commit, nil
	}
	return g.earlierCommit(c, key, cluster, commit, 0)
}

func printDiff(w io.Writer, key api.GitRepoKey, o diffOutput) error {
	var b strings.Builder
	changed := 0
	for _, c := range o.Clusters {
		if c.Changed() {
			changed++
		}
	}
	fmt.Fprintf(&b, "gitrepo/%s at commit %s: %d cluster(s), %d with changes\n", key, api.ShortCommit(o.Commit), len(o.Clusters), changed)
	if o.Paused {
		b.WriteString("the GitRepo is paused: nothing is applied until it is resumed ('flotilla resume')\n")
	}
	for _, c := range o.Clusters {
		switch {
		case c.Error != "":
			fmt.Fprintf(&b, "cluster %s: error: %s\n", c.Cluster, c.Error)
			continue
		case !c.Changed() && !c.Failed():
			fmt.Fprintf(&b, "cluster %s: no changes\n", c.Cluster)
			continue
		}
		fmt.Fprintf(&b, "cluster %s:\n", c.Cluster)
		for _, bd := range c.Bundles {
			printBundleDiff(&b, bd)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func printBundleDiff(b *strings.Builder, d api.BundleDiff) {
	name := "bundle " + d.Bundle
	if d.Release != "" {
		name += fmt.Sprintf(" (release %s/%s)", d.Namespace, d.Release)
	}
	switch {
	case d.Error != "":
		fmt.Fprintf(b, "  %s: error: %s\n", name, d.Error)
		return
	case !d.Changed():
		fmt.Fprintf(b, "  %s: no changes\n", name)
		return
	}
	action := d.Action
	if d.Revision > 0 {
		action += fmt.Sprintf(" to revision %d", d.Revision)
	}
	if d.Action == api.DiffNone {
		action = "no revision"
	}
	if d.Reason != "" {
		action += ": " + d.Reason
	}
	fmt.Fprintf(b, "  %s: %s\n", name, action)
	if len(d.Objects) == 0 && (d.Action == api.DiffUpgrade || d.Action == api.DiffRepair) {
		b.WriteString("    (no object changes)\n")
	}
	for _, o := range d.Objects {
		ref := o.Kind + " " + o.Name
		if o.Namespace != "" {
			ref = o.Kind + " " + o.Namespace + "/" + o.Name
		}
		mark := map[string]string{api.ObjectCreate: "+", api.ObjectUpdate: "~", api.ObjectDelete: "-"}[o.Change]
		fmt.Fprintf(b, "    %s %s\n", mark, ref)
		for _, f := range o.Fields {
			fmt.Fprintf(b, "        %s: %s → %s\n", f.Path, orAbsent(f.Live), orAbsent(f.Desired))
		}
	}
}

func orAbsent(v string) string {
	if v == "" {
		return "(absent)"
	}
	return v
}
