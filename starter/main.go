// Command flotilla is Flotilla's CLI, the operator's one tool; `make build` builds this folder into
// bin/flotilla. The folder is called starter after the program in Temporal's samples that starts and
// signals workflows, because that is what the CLI does: `cluster` and `apply` change the inventory
// workflow through its updates and start GitRepo workflows (`cluster remove` then waits, reading the
// GitRepos' status, until they have uninstalled from the cluster); `status` reads a GitRepo's status query and
// `get gitrepos` the GitRepos' search attributes; `sync`, `pause`, `resume` and `delete` signal a GitRepo
// (`sync --allow-removal` approves a held plan through an update). `render` previews what a cluster would
// get, rendered here as the worker renders it, from a folder without Temporal or for a running GitRepo at
// its commit. No command contacts a cluster.
//
// -n/--namespace is the workspace (Fleet's namespace) a command works in, as kubectl's and Fleet's CLI's
// is: fleet-default when not given, or for `apply` the documents' metadata.namespace. The Temporal
// namespace is --temporal-namespace (env TEMPORAL_NAMESPACE), as in the worker.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"

	"github.com/flotilla-gitops/flotilla/api"
	"github.com/flotilla-gitops/flotilla/fleet"
	"github.com/flotilla-gitops/flotilla/internal/envdefault"
	"github.com/flotilla-gitops/flotilla/internal/searchattr"
	"github.com/flotilla-gitops/flotilla/internal/temporalconn"
)

// exitError carries a specific exit code (e.g. 3: not ready before --timeout).
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}

func main() {
	root := newRoot()
	if err := root.Execute(); err != nil {
		var ee *exitError
		if errors.As(err, &ee) && ee.err == nil {
			os.Exit(ee.code) // the command has said all there is to say (flotilla diff's changes)
		}
		fmt.Fprintln(os.Stderr, "error:", err)
		if errors.As(err, &ee) {
			os.Exit(ee.code)
		}
		os.Exit(1)
	}
}

type globals struct {
	address string
	// temporalNamespace is the Temporal namespace (--temporal-namespace, env TEMPORAL_NAMESPACE).
	temporalNamespace string
	// namespace is the workspace (-n/--namespace), "" when not given: fleet-default, except for `apply`,
	// which then takes each document's metadata.namespace.
	namespace string
	// taskQueue is the installation's: what this CLI starts runs on it, and it sees only the GitRepos and
	// the inventory on it.
	taskQueue string
	output    string
	timeout   time.Duration
	// conn is how to reach Temporal securely (--tls*, --api-key-file); address and temporalNamespace
	// complete it at dial.
	conn temporalconn.Settings
}

func newRoot() *cobra.Command { return newRootWith(&globals{}) }

// newRootWith builds the command tree around g, which its flags fill.
func newRootWith(g *globals) *cobra.Command {
	root := &cobra.Command{
		Use:           "flotilla",
		Short:         "GitOps delivery of Helm charts, manifests and kustomizations to fleets of clusters, on Temporal",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.PersistentFlags().StringVar(&g.address, "address", envdefault.TemporalAddress(), "Temporal frontend host:port (env TEMPORAL_ADDRESS)")
	root.PersistentFlags().StringVar(&g.temporalNamespace, "temporal-namespace", envdefault.TemporalNamespace(), "Temporal namespace (env TEMPORAL_NAMESPACE)")
	root.PersistentFlags().StringVarP(&g.namespace, "namespace", "n", "",
		"the workspace (Fleet namespace) of GitRepos, clusters and groups (default "+fleet.DefaultNamespace+"; apply: each document's metadata.namespace)")
	root.PersistentFlags().StringVar(&g.taskQueue, "task-queue", envdefault.TaskQueue(),
		"the installation's task queue, as its worker's --task-queue (env FLOTILLA_TASK_QUEUE)")
	root.PersistentPreRunE = func(*cobra.Command, []string) error {
		if err := api.CheckTaskQueue(g.taskQueue); err != nil {
			return fmt.Errorf("--task-queue (or FLOTILLA_TASK_QUEUE): %w", err)
		}
		if g.namespace != "" {
			if err := api.CheckNamespace(g.namespace); err != nil {
				return fmt.Errorf("-n/--namespace: %w", err)
			}
		}
		return nil
	}
	root.PersistentFlags().DurationVar(&g.timeout, "request-timeout", 30*time.Second, "timeout of each call to Temporal, and how long to keep trying to reach it")
	g.conn.AddPFlags(root.PersistentFlags())
	root.AddCommand(newApplyCmd(g), newClusterCmd(g), newAgentCmd(g), newInstallationKeyCmd(), newGetCmd(g), newStatusCmd(g),
		newSyncCmd(g), newHistoryCmd(g), newRolloutCmd(g), newRollbackCmd(g), newDiffCmd(g),
		newSignalCmd(g, "pause", "Stop changes from reaching clusters (status shows OutOfSync)", signalPause),
		newSignalCmd(g, "resume", "Let changes reach clusters again", signalResume),
		newSignalCmd(g, "delete", "Uninstall the GitRepo from every cluster and end its workflow", signalDelete),
	)
	root.AddCommand(newRenderCmd(g), newCodecServerCmd(g), newProbeCmd())
	return root
}

// dial connects as the worker does (internal/temporalconn), giving up on an unreachable server after
// --request-timeout: the operator is waiting at a prompt.
func (g *globals) dial() (client.Client, error) {
	s := g.conn
	s.Address, s.Namespace, s.ConnectTimeout = g.address, g.temporalNamespace, g.timeout
	return temporalconn.Dial(context.Background(), s, sdklog.NewStructuredLogger(discardLogger()))
}

// dialGitRepos dials for a command that reads or steers GitRepos: on a namespace without Flotilla's search
// attributes no GitRepo can run, and the command says so instead of printing nothing. Registering
// clusters and applying GitRepos need no such check: a worker started later creates the attributes.
func (g *globals) dialGitRepos() (client.Client, error) {
	c, err := g.dial()
	if err != nil {
		return nil, err
	}
	ctx, cancel := g.ctx()
	defer cancel()
	if err := searchattr.Check(ctx, searchattr.Service{Client: c.OperatorService()}, g.temporalNamespace, api.SearchAttributes); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// workspace is the workspace -n names, fleet-default when it names none.
func (g *globals) workspace() string { return fleet.Workspace(g.namespace) }

// key is the GitRepo name of the workspace -n names.
func (g *globals) key(name string) api.GitRepoKey { return api.KeyOf(g.namespace, name) }

// addAllNamespacesFlag adds -A/--all-namespaces to a listing, as kubectl has it.
func addAllNamespacesFlag(cmd *cobra.Command, all *bool) {
	cmd.Flags().BoolVarP(all, "all-namespaces", "A", false, "list every workspace's, with a NAMESPACE column (-n is ignored)")
}

func (g *globals) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), g.timeout)
}
