package activities

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flotilla-gitops/flotilla/agentclient"
	"github.com/flotilla-gitops/flotilla/api"
)

// deleteNamespace asks for the namespaces of uninstalled releases whose bundle set it and for the
// GitRepo's targetNamespace; before the cluster is asked anything, protected namespaces, namespaces where a
// release kept its objects and every namespace of a confined cluster stay.
func TestWhichNamespacesAnUninstallMayDelete(t *testing.T) {
	rel := func(ns string, deleteNamespace bool) agentclient.ReleaseState {
		r := agentclient.ReleaseState{Name: "r-" + ns, Namespace: ns, Labels: map[string]string{}}
		if deleteNamespace {
			r.Labels[api.LabelDeleteNamespace] = "true"
		}
		return r
	}
	var d namespaceDeletions
	d.uninstalled(rel("web", true), false)
	d.uninstalled(rel("api", false), false)
	d.uninstalled(rel("data", true), true)
	d.uninstalled(rel("web", true), false)
	d.ask("shop")
	d.ask("data")
	d.ask("kube-system")
	require.Equal(t, []string{"web", "shop", "data", "kube-system"}, d.asked, "each once, in the order asked; api's bundle did not ask")

	for ns, want := range map[string]string{
		"web":            "",
		"shop":           "",
		"data":           "a release in it kept its objects (keepResources)",
		"default":        "protected: default, kube-*, fleet-* and cattle-fleet-* are never deleted",
		"kube-system":    "protected: default, kube-*, fleet-* and cattle-fleet-* are never deleted",
		"fleet-default":  "protected: default, kube-*, fleet-* and cattle-fleet-* are never deleted",
		"cattle-fleet-x": "protected: default, kube-*, fleet-* and cattle-fleet-* are never deleted",
	} {
		require.Equal(t, want, d.keepReason(ns, ""), ns)
	}
	require.Contains(t, d.keepReason("web", "team-a"), "confined to namespace team-a")
}
