package credentials

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// A GitRepo uses only the secrets of its own workspace, as a Fleet GitRepo only Secrets of its namespace:
// a secret says which workspaces it is given to, and one that says none is fleet-default's.
func TestASecretServesOnlyTheWorkspacesItIsGivenTo(t *testing.T) {
	for _, form := range []struct {
		name string
		load func() (*Store, error)
	}{
		{"file", func() (*Store, error) {
			return Load(writeFile(t, map[string]map[string]any{
				"legacy": {"password": password},
				"team-a": {"password": password, "workspaces": []string{"team-a"}},
				"shared": {"password": password, "workspaces": []string{"*"}},
				"scoped": {"password": password, "workspaces": []string{"team-a", "fleet-default"}, "urlPrefixes": []string{"https://git.example/team-a/"}},
			}))
		}},
		{"folder", func() (*Store, error) {
			return Load(writeFolder(t, map[string]map[string]string{
				"legacy": {"password": password},
				"team-a": {"password": password, "workspaces": "team-a\n"},
				"shared": {"password": password, "workspaces": "*"},
				"scoped": {"password": password, "workspaces": "team-a, fleet-default", "urlPrefixes": "https://git.example/team-a/\n"},
			}))
		}},
	} {
		t.Run(form.name, func(t *testing.T) {
			store, err := form.load()
			require.NoError(t, err)
			const url = "https://git.example/team-a/web.git"
			allowed := func(workspace, name string) error { _, err := store.For(workspace, name, url); return err }

			require.NoError(t, allowed("", "legacy"), "an unscoped secret is fleet-default's, as before workspaces")
			require.NoError(t, allowed("fleet-default", "legacy"))
			err = allowed("team-b", "legacy")
			var ng *NotGivenError
			require.ErrorAs(t, err, &ng)
			require.EqualError(t, err, `secret "legacy" is not given to workspace "team-b": a GitRepo uses only the secrets of its own workspace `+
				`(this one's workspaces: fleet-default); list "team-b" in the secret's workspaces in `+store.Source())

			require.NoError(t, allowed("team-a", "team-a"))
			require.Error(t, allowed("team-b", "team-a"), "another team's secret")
			require.Error(t, allowed("", "team-a"), "fleet-default is a workspace like another")

			require.NoError(t, allowed("team-b", "shared"))
			require.NoError(t, allowed("anyone", "shared"))

			require.NoError(t, allowed("team-a", "scoped"))
			_, err = store.For("team-a", "scoped", "https://user:pw@git.example/team-b/web.git?x=y")
			require.EqualError(t, err, `secret "scoped" is only sent to URLs under https://git.example/team-a/, and `+
				`https://git.example/team-b/web.git is not one (urlPrefixes in `+store.Source()+`)`)
		})
	}
}

func TestAWorkspaceOrPrefixThatIsNoneIsRefusedAtLoad(t *testing.T) {
	_, err := Load(writeFile(t, map[string]map[string]any{"x": {"password": password, "workspaces": []string{"Team_A"}}}))
	require.ErrorContains(t, err, `secret "x": key workspaces: "Team_A" is not a workspace`)
	_, err = Load(writeFile(t, map[string]map[string]any{"x": {"password": password, "urlPrefixes": []string{"git.example"}}}))
	require.ErrorContains(t, err, `secret "x": key urlPrefixes: "git.example" is not a URL prefix`)
}
