package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/flotilla-gitops/flotilla/api"
	"github.com/flotilla-gitops/flotilla/fleet"
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
	var kubeconfig, kubeContext, valuesFile string
	var labels, annotations []string
	var replace bool
	cmd := &cobra.Command{
		Use:   "add [-n NAMESPACE] NAME --kubeconfig PATH [--label k=v]... [--annotation k=v]... [--values FILE] [--replace]",
		Short: "Register a cluster in a workspace (-n, default fleet-default); --replace replaces the settings of one that exists (only the kubeconfig's path is stored, never its content)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if kubeconfig == "" {
				return errors.New("--kubeconfig PATH is required")
			}
			abs, err := filepath.Abs(kubeconfig)
			if err != nil {
				return err
			}
			if _, err := os.Stat(abs); err != nil {
				return fmt.Errorf("--kubeconfig: %w", err)
			}
			c := fleet.Cluster{APIVersion: fleet.APIVersion, Kind: fleet.KindCluster,
				Metadata: fleet.ObjectMeta{Name: args[0], Namespace: g.workspace()},
				Spec:     fleet.ClusterSpec{KubeConfigPath: abs, KubeConfigContext: kubeContext}}
			if c.Metadata.Labels, err = parsePairs("label", labels); err != nil {
				return err
			}
			if c.Metadata.Annotations, err = parsePairs("annotation", annotations); err != nil {
				return err
			}
			if valuesFile != "" {
				data, err := os.ReadFile(valuesFile)
				if err != nil {
					return fmt.Errorf("--values: %w", err)
				}
				if err := yaml.Unmarshal(data, &c.Spec.TemplateValues); err != nil {
					return fmt.Errorf("--values %s: %w", valuesFile, err)
				}
			}
			if err := inventory.ValidateCluster(c); err != nil {
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
			if replace {
				update = api.UpdateUpsertCluster
			}
			res, err := g.updateInventory(ctx, cl, update, c)
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), changeMessage("cluster", fleet.DisplayName(c.Metadata.Namespace, c.Metadata.Name), res))
			return nil
		},
	}
	cmd.Flags().StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig file on the worker's host")
	cmd.Flags().StringVar(&kubeContext, "context", "", "kubeconfig context (default: its current context)")
	cmd.Flags().StringArrayVar(&labels, "label", nil, "cluster label k=v (repeatable)")
	cmd.Flags().StringArrayVar(&annotations, "annotation", nil, "cluster annotation k=v (repeatable)")
	cmd.Flags().StringVar(&valuesFile, "values", "", "YAML file with the cluster's templateValues")
	cmd.Flags().BoolVar(&replace, "replace", false, "replace the kubeconfig, labels, annotations and values of a registered cluster (all of them: what is not given is removed)")
	return cmd
}

func newClusterListCmd(g *globals) *cobra.Command {
	var all bool
	cmd := &cobra.Command{
		Use:   "list [-n NAMESPACE | -A]",
		Short: "List the clusters registered in a workspace (-n, default fleet-default; -A: every workspace)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cl, err := g.dial()
			if err != nil {
				return err
			}
			defer cl.Close()
			ctx, cancel := g.ctx()
			defer cancel()
			v, err := cl.QueryWorkflow(ctx, api.InventoryWorkflowID(g.taskQueue), "", api.QueryInventory)
			if err != nil {
				return fmt.Errorf("reading the inventory: %w", err)
			}
			var inv inventory.Inventory
			if err := v.Get(&inv); err != nil {
				return err
			}
			if !all {
				inv = inv.InWorkspace(g.workspace())
			}
			if g.output != "table" && g.output != "" {
				return printStructured(cmd.OutOrStdout(), g.output, inv)
			}
			w := tabWriter(cmd.OutOrStdout())
			if all {
				fmt.Fprint(w, "NAMESPACE\t")
			}
			fmt.Fprintln(w, "NAME\tSTATE\tLABELS\tKUBECONFIG")
			for _, c := range inv.Clusters {
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
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", c.Metadata.Name, state, labelList(c.Metadata.Labels), c.Spec.KubeConfigPath)
			}
			return w.Flush()
		},
	}
	addOutputFlag(cmd, g)
	addAllNamespacesFlag(cmd, &all)
	return cmd
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
