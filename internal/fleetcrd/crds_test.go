package fleetcrd

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

func definition(t *testing.T, plural string) *apiextensionsv1.CustomResourceDefinition {
	for _, d := range Definitions() {
		if d.Spec.Names.Plural == plural {
			return d
		}
	}
	t.Fatalf("no definition for %s", plural)
	return nil
}

// The schemas are written from the types `flotilla apply` decodes, with Fleet's names, so the API server
// refuses (kubectl) the fields Flotilla would not read instead of dropping them silently.
func TestTheSchemasCarryFleetsFieldNames(t *testing.T) {
	spec := definition(t, "gitrepos").Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
	for _, field := range []string{"repo", "branch", "revision", "paths", "targets", "paused", "forceSyncGeneration", "targetNamespace",
		"clientSecretName", "helmSecretName", "pollingInterval", "correctDrift", "syncWindows"} {
		require.Contains(t, spec.Properties, field)
	}
	require.NotContains(t, spec.Properties, "helmOp", "Flotilla's own way of running a HelmOp is not Fleet's field")
	require.Equal(t, "string", spec.Properties["caBundle"].Type)
	require.Equal(t, "byte", spec.Properties["caBundle"].Format)
	target := spec.Properties["targets"].Items.Schema
	require.Contains(t, target.Properties["clusterSelector"].Properties, "matchLabels")

	cluster := definition(t, "clusters").Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
	require.Contains(t, cluster.Properties, "kubeConfigSecret")
	require.NotNil(t, cluster.Properties["templateValues"].XPreserveUnknownFields, "templateValues hold anything")

	helmOp := definition(t, "helmops").Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
	require.Contains(t, helmOp.Properties["helm"].Properties, "chart")
	require.True(t, helmOp.Properties["rolloutStrategy"].Properties["maxUnavailable"].XIntOrString)

	restriction := definition(t, "gitreporestrictions").Spec.Versions[0].Schema.OpenAPIV3Schema
	require.Contains(t, restriction.Properties, "allowedRepoPatterns", "a restriction's fields are at the top level, as Fleet's")
	require.NotContains(t, restriction.Properties, "metadata")
}

func TestThePrinterColumnsAreFleets(t *testing.T) {
	var names []string
	for _, c := range definition(t, "gitrepos").Spec.Versions[0].AdditionalPrinterColumns {
		names = append(names, c.Name)
	}
	require.Equal(t, []string{"Repo", "Commit", "BundleDeployments-Ready", "Status", "Age"}, names)
	for _, d := range Definitions() {
		require.NotNil(t, d.Spec.Versions[0].Subresources.Status, "%s: status is the controller's, spec the user's", d.Name)
	}
}

// In a management cluster where Fleet runs, its definitions are Fleet's: replacing their schemas would
// prune what Fleet stores, so the controller refuses and says how to go on.
func TestDefinitionsItDidNotInstallAreLeftAlone(t *testing.T) {
	scheme := runtime.NewScheme()
	require.NoError(t, apiextensionsv1.AddToScheme(scheme))
	fleets := Definitions()[0].DeepCopy()
	fleets.Labels = map[string]string{"app.kubernetes.io/managed-by": "Helm"}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(fleets).Build()
	err := Install(context.Background(), c)
	require.EqualError(t, err, "CustomResourceDefinition gitrepos.fleet.cattle.io exists and was not installed by flotilla-controller "+
		"(is Fleet installed?): remove it, or start with --skip-crds to serve the definition as it is")
}
