package bundle

import (
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flotilla-gitops/flotilla/fleet"
)

// dependsOn is read as Fleet writes it: a name, a selector, or both, each with its accepted states.
func TestDependsOnIsRead(t *testing.T) {
	b, err := loadOne(t, "fleet.yaml", `dependsOn:
- name: crd
- selector:
    matchLabels: {tier: db}
    matchExpressions:
    - {key: env, operator: In, values: [prod]}
  acceptedStates: [Ready, Modified]
- name: cache
  selector: {matchLabels: {tier: cache}}
  acceptedStates: [Ready, NotReady, WaitApplied, ErrApplied, OutOfSync, Pending, Modified]
`)
	require.NoError(t, err)
	require.Empty(t, b.Warnings)
	require.Equal(t, []fleet.Dependency{
		{Name: "crd"},
		{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "db"},
			MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "env", Operator: metav1.LabelSelectorOpIn, Values: []string{"prod"}}}},
			AcceptedStates: []string{"Ready", "Modified"}},
		{Name: "cache", Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "cache"}},
			AcceptedStates: []string{"Ready", "NotReady", "WaitApplied", "ErrApplied", "OutOfSync", "Pending", "Modified"}},
	}, b.FleetYAML.DependsOn)
}

// What Fleet's `fleet apply` refuses is an error naming the file, the line and the entry; so are a
// selector that cannot be parsed and a misspelt key.
func TestDependsOnMistakesAreErrorsNamingTheEntry(t *testing.T) {
	for _, tc := range []struct{ yaml, want string }{
		{"dependsOn:\n- name: crd\n- acceptedStates: [Ready]\n",
			`web/fleet.yaml: line 3: dependsOn[1]: set name or selector`},
		{"dependsOn:\n- name: crd\n  acceptedStates: [Ready, ready]\n",
			`web/fleet.yaml: line 3: dependsOn[0].acceptedStates[1]: unknown state "ready" ` +
				`(want one of Ready, NotReady, Pending, OutOfSync, Modified, WaitApplied, ErrApplied)`},
		{"dependsOn:\n- selector:\n    matchExpressions:\n    - {key: tier, operator: Near, values: [db]}\n",
			`web/fleet.yaml: line 2: dependsOn[0].selector: "Near" is not a valid label selector operator`},
		{"dependsOn:\n- nmae: crd\n",
			`web/fleet.yaml: line 2: unknown key "nmae" in dependsOn[0] (did you mean "name"?)`},
		{"dependsOn:\n- selector: {matchLabel: {tier: db}}\n",
			`web/fleet.yaml: line 2: unknown key "matchLabel" in dependsOn[0].selector (did you mean "matchLabels"?)`},
		{"targetCustomizations:\n- name: prod\n  clusterName: prod\n  dependsOn: [{name: crd}]\n",
			`web/fleet.yaml: line 4: unknown key "dependsOn" in targetCustomizations[0]`},
	} {
		_, err := loadOne(t, "fleet.yaml", tc.yaml)
		require.EqualError(t, err, tc.want, tc.yaml)
	}
}
