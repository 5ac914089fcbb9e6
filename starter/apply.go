package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
	"go.temporal.io/sdk/client"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/flotilla-gitops/flotilla/api"
	"github.com/flotilla-gitops/flotilla/fleet"
	"github.com/flotilla-gitops/flotilla/internal/gitrepoctl"
	"github.com/flotilla-gitops/flotilla/inventory"
)

func newApplyCmd(g *globals) *cobra.Command {
	var file string
	cmd := &cobra.Command{
		Use:   "apply [-n NAMESPACE] -f FILE",
		Short: "Create or update GitRepos, Clusters and ClusterGroups from Fleet YAML (multi-document; - for stdin), each in the namespace its metadata names (or -n)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if file == "" {
				return errors.New("-f FILE is required")
			}
			data, err := readInput(file)
			if err != nil {
				return err
			}
			docs, err := parseDocuments(file, data)
			if err != nil {
				return err
			}
			c, err := g.dial()
			if err != nil {
				return err
			}
			defer c.Close()
			for _, d := range docs {
				ctx, cancel := g.ctx()
				msg, err := g.applyDocument(ctx, c, d)
				cancel()
				if err != nil {
					return fmt.Errorf("%s: %s %q: %w", file, d.kind, d.name, err)
				}
				fmt.Fprintln(cmd.OutOrStdout(), msg)
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&file, "filename", "f", "", "file to apply (- for standard input)")
	return cmd
}

func readInput(file string) ([]byte, error) {
	if file == "-" {
		return io.ReadAll(os.Stdin)
	}
	return os.ReadFile(file)
}

type document struct {
	kind, name string
	gitRepo    *fleet.GitRepo
	helmOp     *fleet.HelmOp
	cluster    *fleet.Cluster
	group      *fleet.ClusterGroup
}

// parseDocuments splits a YAML stream and decodes each document by kind; errors name the document.
func parseDocuments(file string, data []byte) ([]document, error) {
	var docs []document
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for i := 0; ; i++ {
		raw, err := reader.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", file, i+1, err)
		}
		if len(bytes.TrimSpace(raw)) == 0 {
			continue
		}
		var head struct {
			APIVersion string           `json:"apiVersion"`
			Kind       string           `json:"kind"`
			Metadata   fleet.ObjectMeta `json:"metadata"`
		}
		if err := yaml.Unmarshal(raw, &head); err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", file, i+1, err)
		}
		d := document{kind: head.Kind, name: head.Metadata.Name}
		var target any
		switch head.Kind {
		case fleet.KindGitRepo:
			d.gitRepo = &fleet.GitRepo{}
			target = d.gitRepo
		case fleet.KindHelmOp:
			d.helmOp = &fleet.HelmOp{}
			target = d.helmOp
		case fleet.KindCluster:
			d.cluster = &fleet.Cluster{}
			target = d.cluster
		case fleet.KindClusterGroup:
			d.group = &fleet.ClusterGroup{}
			target = d.group
		default:
			return nil, fmt.Errorf("%s: document %d: kind %q: want GitRepo, HelmOp, Cluster or ClusterGroup", file, i+1, head.Kind)
		}
		if head.APIVersion != "" && head.APIVersion != fleet.APIVersion {
			return nil, fmt.Errorf("%s: document %d: apiVersion %q: want %s", file, i+1, head.APIVersion, fleet.APIVersion)
		}
		if err := yaml.UnmarshalStrict(raw, target); err != nil {
			return nil, fmt.Errorf("%s: document %d (%s %q): %w", file, i+1, head.Kind, head.Metadata.Name, err)
		}
		if d.gitRepo != nil && d.gitRepo.Spec.ServiceAccount != "" {
			// Applying with the cluster's own identity would silently drop the restriction the user asked for.
			return nil, fmt.Errorf("%s: document %d (GitRepo %q): spec.serviceAccount %q: impersonating a service account is not supported yet; "+
				"remove it, or give the cluster a kubeconfig with only the rights the GitRepo needs", file, i+1, head.Metadata.Name, d.gitRepo.Spec.ServiceAccount)
		}
		if d.gitRepo != nil && d.gitRepo.Spec.HelmOp != nil {
			return nil, fmt.Errorf("%s: document %d (GitRepo %q): spec.helmOp is Flotilla's own: write a HelmOp document (kind: HelmOp)", file, i+1, head.Metadata.Name)
		}
		if d.helmOp != nil {
			gr, err := d.helmOp.AsGitRepo()
			if err != nil {
				return nil, fmt.Errorf("%s: document %d: %w", file, i+1, err)
			}
			d.gitRepo = &gr
		}
		docs = append(docs, d)
	}
	if len(docs) == 0 {
		return nil, fmt.Errorf("%s: no documents", file)
	}
	return docs, nil
}

func (g *globals) applyDocument(ctx context.Context, c client.Client, d document) (string, error) {
	switch {
	case d.gitRepo != nil:
		if err := g.documentNamespace(&d.gitRepo.Metadata); err != nil {
			return "", err
		}
		return g.applyGitRepo(ctx, c, *d.gitRepo)
	case d.cluster != nil:
		if err := g.documentNamespace(&d.cluster.Metadata); err != nil {
			return "", err
		}
		res, err := g.updateInventory(ctx, c, api.UpdateUpsertCluster, *d.cluster)
		return changeMessage("cluster", fleet.DisplayName(d.cluster.Metadata.Namespace, d.name), res), err
	default:
		if err := g.documentNamespace(&d.group.Metadata); err != nil {
			return "", err
		}
		res, err := g.updateInventory(ctx, c, api.UpdateUpsertClusterGroup, *d.group)
		return changeMessage("clustergroup", fleet.DisplayName(d.group.Metadata.Namespace, d.name), res), err
	}
}

// documentNamespace settles a document's namespace as kubectl does: its metadata.namespace, else -n, else
// none (fleet-default). A document that names another namespace than -n is refused: applying it
// elsewhere than it says, or elsewhere than the command line says, would both surprise someone.
func (g *globals) documentNamespace(m *fleet.ObjectMeta) error {
	if m.Namespace != "" {
		if err := api.CheckNamespace(m.Namespace); err != nil {
			return fmt.Errorf("metadata.%w", err)
		}
	}
	switch {
	case g.namespace == "":
	case m.Namespace == "":
		m.Namespace = g.namespace
	case fleet.Workspace(m.Namespace) != fleet.Workspace(g.namespace):
		return fmt.Errorf("metadata.namespace is %q but -n/--namespace is %q: give the namespace once, or the same in both",
			m.Namespace, g.namespace)
	}
	return nil
}

func changeMessage(kind, name string, res inventory.ChangeResult) string {
	if res.Changed {
		return fmt.Sprintf("%s/%s configured", kind, name)
	}
	return fmt.Sprintf("%s/%s unchanged", kind, name)
}

// applyGitRepo starts the GitRepo's workflow on this installation's task queue, or hands a running one
// the new spec.
func (g *globals) applyGitRepo(ctx context.Context, c client.Client, gr fleet.GitRepo) (string, error) {
	kind, err := gitrepoctl.Apply(ctx, c, g.taskQueue, gr, "")
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%s/%s configured", kind, api.KeyOf(gr.Metadata.Namespace, gr.Metadata.Name)), nil
}

// updateInventory runs a validated update on this installation's inventory workflow, starting it if needed.
func (g *globals) updateInventory(ctx context.Context, c client.Client, update string, arg any) (inventory.ChangeResult, error) {
	return gitrepoctl.UpdateInventory(ctx, c, g.taskQueue, update, arg)
}
