package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"go.temporal.io/sdk/client"
	"sigs.k8s.io/yaml"

	"github.com/flotilla-gitops/flotilla/api"
	"github.com/flotilla-gitops/flotilla/fleet"
	"github.com/flotilla-gitops/flotilla/internal/agentkeeper"
	"github.com/flotilla-gitops/flotilla/inventory"
)

func newClusterCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "cluster", Short: "Register, list and remove clusters (remove uninstalls every GitRepo from the cluster first)"}
	cmd.AddCommand(newClusterAddCmd(g), newClusterListCmd(g), newClusterRemoveCmd(g))
	return cmd
}

func parsePairs(flag string, pairs []string) (map[string]string, error) {
	out := map[string]string{}
	for _, p := range pairs {
		k, v, ok := strings.Cut(p, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("--%s %q: want key=value", flag, p)
		}
		out[k] = v
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

func newClusterAddCmd(g *globals) *cobra.Command {
	var f clusterAddFlags
	cmd := &cobra.Command{
		Use: "add [-n NAMESPACE] NAME (--kubeconfig PATH | --agent [--agent-...]) [--label k=v]... [--annotation k=v]... [--values FILE] [--replace]",
		Short: "Register a cluster in a workspace (-n, default fleet-default), reached through a kubeconfig on the worker's host or, with --agent, " +
			"through an agent in the cluster that dials out; --replace replaces the settings of one that exists (only the kubeconfig's path is stored, never its content)",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := f.cluster(cmd.Flags(), args[0], g.workspace())
			if err != nil {
				return err
			}
			cl, err := g.dial()
			if err != nil {
				return err
			}
			defer cl.Close()
			ctx, cancel := g.ctx()
			defer cancel()
			update := api.UpdateAddCluster
			if f.replace {
				update = api.UpdateUpsertCluster
			}
			res, err := g.updateInventory(ctx, cl, update, c)
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), changeMessage("cluster", fleet.DisplayName(c.Metadata.Namespace, c.Metadata.Name), res))
			// Its AgentWorkflow applies a changed agent setting now, and ends for a cluster that left agent mode.
			if c.Spec.Agent != nil {
				return agentkeeper.Ensure(ctx, cl, g.taskQueue, c.Metadata.Namespace, c.Metadata.Name)
			}
			return agentkeeper.Check(ctx, cl, g.taskQueue, c.Metadata.Namespace, c.Metadata.Name)
		},
	}
	f.add(cmd.Flags())
	return cmd
}

// clusterAddFlags are `cluster add`'s flags.
type clusterAddFlags struct {
	kubeconfig, kubeContext, valuesFile string
	labels, annotations                 []string
	replace                             bool
	agent                               agentFlags
}

func (f *clusterAddFlags) add(fs *pflag.FlagSet) {
	fs.StringVar(&f.kubeconfig, "kubeconfig", "", "kubeconfig file on the worker's host")
	fs.StringVar(&f.kubeContext, "context", "", "kubeconfig context (default: its current context)")
	fs.StringArrayVar(&f.labels, "label", nil, "cluster label k=v (repeatable)")
	fs.StringArrayVar(&f.annotations, "annotation", nil, "cluster annotation k=v (repeatable)")
	fs.StringVar(&f.valuesFile, "values", "", "YAML file with the cluster's templateValues")
	fs.BoolVar(&f.replace, "replace", false, "replace the kubeconfig or agent settings, labels, annotations and values of a registered cluster (all of them: what is not given is removed)")
	f.agent.add(fs)
}

// cluster is the cluster the flags register, checked as the inventory will check it, before any call to
// Temporal.
func (f *clusterAddFlags) cluster(fs *pflag.FlagSet, name, workspace string) (fleet.Cluster, error) {
	c := fleet.Cluster{APIVersion: fleet.APIVersion, Kind: fleet.KindCluster, Metadata: fleet.ObjectMeta{Name: name, Namespace: workspace}}
	agent, err := f.agent.spec(fs)
	if err != nil {
		return c, err
	}
	switch {
	case agent != nil && (f.kubeconfig != "" || f.kubeContext != ""):
		return c, errors.New("--agent and --kubeconfig/--context exclude each other: the cluster is reached through a kubeconfig on the worker's host, " +
			"or through an agent in it that dials out")
	case agent != nil:
		c.Spec.Agent = agent
	case f.kubeconfig == "":
		return c, errors.New("--kubeconfig PATH or --agent is required (a kubeconfig on the worker's host, or an agent in the cluster that dials out)")
	default:
		abs, err := filepath.Abs(f.kubeconfig)
		if err != nil {
			return c, err
		}
		if _, err := os.Stat(abs); err != nil {
			return c, fmt.Errorf("--kubeconfig: %w", err)
		}
		c.Spec.KubeConfigPath, c.Spec.KubeConfigContext = abs, f.kubeContext
	}
	if c.Metadata.Labels, err = parsePairs("label", f.labels); err != nil {
		return c, err
	}
	if c.Metadata.Annotations, err = parsePairs("annotation", f.annotations); err != nil {
		return c, err
	}
	if f.valuesFile != "" {
		data, err := os.ReadFile(f.valuesFile)
		if err != nil {
			return c, fmt.Errorf("--values: %w", err)
		}
		if err := yaml.Unmarshal(data, &c.Spec.TemplateValues); err != nil {
			return c, fmt.Errorf("--values %s: %w", f.valuesFile, err)
		}
	}
	return c, inventory.ValidateCluster(c)
}

func newClusterListCmd(g *globals) *cobra.Command {
	var all bool
	cmd := &cobra.Command{
		Use:   "list [-n NAMESPACE | -A]",
		Short: "List the clusters registered in a workspace (-n, default fleet-default; -A: every workspace)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return g.withInventory(func(ctx context.Context, cl client.Client, inv inventory.Inventory) error {
				if !all {
					inv = inv.InWorkspace(g.workspace())
				}
				agents := describeAgents(ctx, cl, g.taskQueue, inv.Clusters)
				return printClusters(cmd.OutOrStdout(), g.output, all, inv, agents, time.Now())
			})
		},
	}
	addOutputFlag(cmd, g)
	addAllNamespacesFlag(cmd, &all)
	return cmd
}

// clusterListing is the inventory as `cluster list -o json|yaml` prints it: the inventory's own keys, and
// for each cluster its mode and what its agent's task queue says of the agent.
type clusterListing struct {
	Generation int64                `json:"generation"`
	Clusters   []listedCluster      `json:"clusters"`
	Groups     []fleet.ClusterGroup `json:"groups"`
	Leaving    []inventory.Leaving  `json:"leaving,omitempty"`
}

type listedCluster struct {
	fleet.Cluster
	// Mode is how the management side reaches the cluster: kubeconfig or agent.
	Mode string `json:"mode"`
	// LastSeen is the agent's most recent poll, absent when none is known; AgentVersion the version its
	// identity names; AgentError why its task queue could not be described.
	LastSeen     *time.Time `json:"lastSeen,omitempty"`
	AgentVersion string     `json:"agentVersion,omitempty"`
	AgentError   string     `json:"agentError,omitempty"`
}

// printClusters prints the listing; agents is describeAgents' answer, by index in inv.Clusters.
func printClusters(out io.Writer, format string, all bool, inv inventory.Inventory, agents map[int]agentSeen, now time.Time) error {
	if format != "table" && format != "" {
		l := clusterListing{Generation: inv.Generation, Groups: inv.Groups, Leaving: inv.Leaving}
		if inv.Clusters != nil {
			l.Clusters = make([]listedCluster, 0, len(inv.Clusters))
		}
		for i, c := range inv.Clusters {
			lc := listedCluster{Cluster: c, Mode: "kubeconfig"}
			if c.Spec.Agent != nil {
				lc.Mode = "agent"
				s := agents[i]
				if !s.lastSeen.IsZero() {
					t := s.lastSeen.UTC()
					lc.LastSeen, lc.AgentVersion = &t, s.version
				}
				if s.err != nil {
					lc.AgentError = s.err.Error()
				}
			}
			l.Clusters = append(l.Clusters, lc)
		}
		return printStructured(out, format, l)
	}
	w := tabWriter(out)
	if all {
		fmt.Fprint(w, "NAMESPACE\t")
	}
	fmt.Fprintln(w, "NAME\tSTATE\tLABELS\tKUBECONFIG\tMODE\tLAST SEEN\tAGENT VERSION")
	for i, c := range inv.Clusters {
		if all {
			fmt.Fprintf(w, "%s\t", fleet.Workspace(c.Metadata.Namespace))
		}
		state := "registered"
		if l, ok := inv.LeavingCluster(c.Metadata.Namespace, c.Metadata.Name); ok {
			state = "leaving"
			if l.KeepWorkloads {
				state = "leaving (keeping workloads)"
			}
		}
		kubeconfig, mode, seen, version := c.Spec.KubeConfigPath, "kubeconfig", "-", "-"
		if c.Spec.KubeConfigSecret != "" {
			kubeconfig = "secret " + c.Spec.KubeConfigSecret
		}
		if c.Spec.Agent != nil {
			kubeconfig, mode, seen, version = "-", "agent", agents[i].lastSeenText(now), agents[i].versionText()
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", c.Metadata.Name, state, labelList(c.Metadata.Labels), kubeconfig, mode, seen, version)
	}
	return w.Flush()
}

func labelList(l map[string]string) string {
	keys := make([]string, 0, len(l))
	for k := range l {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, k+"="+l[k])
	}
	return strings.Join(parts, ",")
}
