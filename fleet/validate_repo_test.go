package fleet_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flotilla-gitops/flotilla/fleet"
)

// The CLI, the workflow and the spec signal all validate through ValidateGitRepo: a credential in any URL
// form stops there, before it reaches a workflow input, a search attribute or an error.
func TestValidateGitRepoRefusesCredentialsInEveryURLForm(t *testing.T) {
	for repo, part := range map[string]string{
		"https://git.example.com/org/repo.git?private_token=SECRET": "spec.repo: a query string",
		"https://git.example.com/org/repo.git#SECRET":               "spec.repo: a fragment",
		"user:SECRET@git.example.com:org/repo.git":                  "spec.repo: a password in the URL's user part",
		"ssh://git:SECRET@git.example.com/org/repo.git":             "spec.repo: a password in the URL's user part",
		"https://SECRET@git.example.com/org/repo.git":               "spec.repo: a user part in an HTTP(S) URL",
	} {
		g := fleet.GitRepo{Metadata: fleet.ObjectMeta{Name: "shop"}, Spec: fleet.GitRepoSpec{Repo: repo}}
		err := fleet.ValidateGitRepo(g)
		require.Error(t, err, repo)
		require.Contains(t, err.Error(), `gitrepo "shop": `+part, repo)
		require.Contains(t, err.Error(), "clientSecretName")
		require.NotContains(t, err.Error(), "SECRET", repo)
	}
}
