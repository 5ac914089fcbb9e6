// Package fleetcrd defines Fleet's CustomResourceDefinitions that flotilla-controller serves
// (fleet.cattle.io/v1alpha1 GitRepo, HelmOp, Cluster, ClusterGroup, GitRepoRestriction) from the types
// `flotilla apply` reads, with Fleet's printer columns, and installs them in a management cluster.
package fleetcrd

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-gitops/flotilla/fleet"
)

// Group and Version are Fleet's.
const (
	Group   = "fleet.cattle.io"
	Version = "v1alpha1"
)

// Kind describes one served kind.
type Kind struct {
	Kind, Plural string
}

// Kinds are the kinds flotilla-controller serves.
var (
	GitRepo            = Kind{fleet.KindGitRepo, "gitrepos"}
	HelmOp             = Kind{fleet.KindHelmOp, "helmops"}
	Cluster            = Kind{fleet.KindCluster, "clusters"}
	ClusterGroup       = Kind{fleet.KindClusterGroup, "clustergroups"}
	GitRepoRestriction = Kind{fleet.KindGitRepoRestriction, "gitreporestrictions"}
)

func column(name, path string) apiextensionsv1.CustomResourceColumnDefinition {
	return apiextensionsv1.CustomResourceColumnDefinition{Name: name, Type: "string", JSONPath: path}
}

const (
	managedByLabel = "app.kubernetes.io/managed-by"
	managedBy      = "flotilla-controller"
)

const readyMessage = `.status.conditions[?(@.type=="Ready")].message`

// Definitions are the CustomResourceDefinitions, each with a status subresource (the controller writes
// status, users write spec) and Fleet's printer columns.
func Definitions() []*apiextensionsv1.CustomResourceDefinition {
	status := anythingObject()
	withSpec := func(spec apiextensionsv1.JSONSchemaProps) apiextensionsv1.JSONSchemaProps {
		return apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"spec": spec, "status": status}}
	}
	restriction := schemaOf(reflect.TypeOf(fleet.GitRepoRestriction{}), "apiVersion", "kind", "metadata")
	restriction.Properties["status"] = status
	return []*apiextensionsv1.CustomResourceDefinition{
		// spec.helmOp is how a HelmOp runs as a GitRepo inside Flotilla, never written by users.
		define(GitRepo, withSpec(schemaOf(reflect.TypeOf(fleet.GitRepoSpec{}), "helmOp")),
			column("Repo", ".spec.repo"), column("Commit", ".status.commit"),
			column("BundleDeployments-Ready", ".status.display.readyBundleDeployments"), column("Status", readyMessage)),
		define(HelmOp, withSpec(schemaOf(reflect.TypeOf(fleet.HelmOpSpec{}))),
			column("Repo", ".spec.helm.repo"), column("Chart", ".spec.helm.chart"), column("Version", ".status.version"),
			column("BundleDeployments-Ready", ".status.display.readyBundleDeployments"), column("Status", readyMessage)),
		define(Cluster, withSpec(schemaOf(reflect.TypeOf(fleet.ClusterSpec{}))),
			column("Bundles-Ready", ".status.display.readyBundles"), column("Last-Seen", ".status.agent.lastSeen"), column("Status", readyMessage)),
		define(ClusterGroup, withSpec(schemaOf(reflect.TypeOf(fleet.ClusterGroupSpec{}))),
			column("Clusters-Ready", ".status.display.readyClusters"), column("Bundles-Ready", ".status.display.readyBundles"), column("Status", readyMessage)),
		define(GitRepoRestriction, restriction,
			column("Default-ServiceAccount", ".defaultServiceAccount"), column("Allowed-ServiceAccounts", ".allowedServiceAccounts")),
	}
}

func define(k Kind, schema apiextensionsv1.JSONSchemaProps, columns ...apiextensionsv1.CustomResourceColumnDefinition) *apiextensionsv1.CustomResourceDefinition {
	return &apiextensionsv1.CustomResourceDefinition{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition"},
		ObjectMeta: metav1.ObjectMeta{Name: k.Plural + "." + Group, Labels: map[string]string{managedByLabel: managedBy}},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: Group,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Kind: k.Kind, ListKind: k.Kind + "List", Plural: k.Plural,
				Singular: strings.ToLower(k.Kind), Categories: []string{"fleet"}},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: Version, Served: true, Storage: true,
				Schema:                   &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &schema},
				Subresources:             &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}},
				AdditionalPrinterColumns: append(columns, apiextensionsv1.CustomResourceColumnDefinition{Name: "Age", Type: "date", JSONPath: ".metadata.creationTimestamp"}),
			}},
		},
	}
}

// Install creates or updates the definitions and waits until the API server serves every one.
func Install(ctx context.Context, c client.Client) error {
	for _, want := range Definitions() {
		var have apiextensionsv1.CustomResourceDefinition
		err := c.Get(ctx, client.ObjectKey{Name: want.Name}, &have)
		switch {
		case apierrors.IsNotFound(err):
			err = c.Create(ctx, want.DeepCopy())
		case err == nil && have.Labels[managedByLabel] != managedBy:
			// Fleet's own definitions, say: replacing their schemas would prune what Fleet stores.
			return fmt.Errorf("CustomResourceDefinition %s exists and was not installed by flotilla-controller (is Fleet installed?): "+
				"remove it, or start with --skip-crds to serve the definition as it is", want.Name)
		case err == nil:
			have.Spec = want.Spec
			err = c.Update(ctx, &have)
		}
		if err != nil {
			return fmt.Errorf("installing CustomResourceDefinition %s: %w", want.Name, err)
		}
	}
	for _, want := range Definitions() {
		err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			var have apiextensionsv1.CustomResourceDefinition
			if err := c.Get(ctx, client.ObjectKey{Name: want.Name}, &have); err != nil {
				return false, nil
			}
			for _, cond := range have.Status.Conditions {
				if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil {
			return fmt.Errorf("CustomResourceDefinition %s is not established: %w", want.Name, err)
		}
	}
	return nil
}
