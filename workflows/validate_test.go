package workflows

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flotilla-gitops/flotilla/fleet"
)

func TestARepositoryURLNeverCarriesCredentials(t *testing.T) {
	gitRepo := func(repo string) fleet.GitRepo {
		g := fleet.GitRepo{Spec: fleet.GitRepoSpec{Repo: repo}}
		g.Metadata.Name = "shop"
		return g
	}
	for _, repo := range []string{"https://user:secret@git.example.com/org/repo.git", "https://ghp_TOKEN@github.com/org/repo", "http://token@git.local/repo"} {
		err := ValidateGitRepo(gitRepo(repo))
		require.Error(t, err, repo)
		require.Contains(t, err.Error(), "clientSecretName")
		require.NotContains(t, err.Error(), "secret@", "the error does not repeat the credential")
		require.NotContains(t, err.Error(), "TOKEN")
	}
	for _, repo := range []string{"https://github.com/org/repo", "ssh://git@github.com/org/repo.git", "git@github.com:org/repo.git", "file:///srv/git/repo"} {
		require.NoError(t, ValidateGitRepo(gitRepo(repo)), repo)
	}
}
