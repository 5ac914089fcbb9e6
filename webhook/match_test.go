package webhook

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestEveryFormOfARepositoryURLNormalizesToHostAndPath(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"https://github.com/org/repo", "github.com/org/repo"},
		{"https://github.com/org/repo.git", "github.com/org/repo"},
		{"https://github.com/org/repo/", "github.com/org/repo"},
		{"https://github.com/org/repo.git/", "github.com/org/repo"},
		{"http://GitHub.COM/Org/Repo", "github.com/org/repo"},
		{"https://user@github.com/org/repo.git", "github.com/org/repo"},
		{"https://user:token@github.com/org/repo.git", "github.com/org/repo"},
		{"ssh://git@github.com/org/repo.git", "github.com/org/repo"},
		{"ssh://git@gitlab.example.com:2222/group/sub/repo.git", "gitlab.example.com/group/sub/repo"},
		{"git@github.com:org/repo.git", "github.com/org/repo"},
		{"git@github.com:/org/repo.git", "github.com/org/repo"},
		{"github.com:org/repo", "github.com/org/repo"},
		{"git://github.com/org/repo.git", "github.com/org/repo"},
		{"https://gitlab.example.com:8443/group/repo?ref=x", "gitlab.example.com/group/repo"},
		{"file:///srv/git/repo.git", "/srv/git/repo"},
		{"  https://github.com/org/repo  ", "github.com/org/repo"},
		{"", ""},
		{"https://github.com/", ""},
		{"not a url", ""},
		{"/srv/git/repo", ""},
	} {
		require.Equal(t, tc.want, NormalizeRepoURL(tc.in), "NormalizeRepoURL(%q)", tc.in)
	}
}

func TestThePushURLsOfOneRepositoryMatchEveryWayAGitRepoNamesIt(t *testing.T) {
	push := newRepoSet([]string{
		"https://github.com/org/fleet.git", "git@github.com:org/fleet.git", "https://github.com/org/fleet", "git://github.com/org/fleet.git",
	})
	for _, repo := range []string{"https://github.com/org/fleet", "ssh://git@github.com/org/fleet.git", "git@github.com:Org/Fleet", "https://github.com/org/fleet/"} {
		require.True(t, push.matches(repo), repo)
	}
	for _, repo := range []string{"https://github.com/org/fleet-infra", "https://github.com/other/fleet", "https://gitlab.com/org/fleet", ""} {
		require.False(t, push.matches(repo), repo)
	}
}

func TestAPushMatchesOnlyTheGitReposWhoseCommitItCanMove(t *testing.T) {
	const sha = "0123456789abcdef0123456789abcdef01234567"
	for _, tc := range []struct {
		name          string
		repo          GitRepo
		ref           string
		defaultBranch string
		want          bool
	}{
		{"branch pushed", GitRepo{Branch: "main"}, "refs/heads/main", "main", true},
		{"other branch pushed", GitRepo{Branch: "main"}, "refs/heads/dev", "main", false},
		{"branch-like prefix", GitRepo{Branch: "main"}, "refs/heads/main2", "main", false},
		{"tag pushed, branch followed", GitRepo{Branch: "main"}, "refs/tags/main", "main", false},
		{"HEAD follows the default branch", GitRepo{}, "refs/heads/trunk", "trunk", true},
		{"HEAD ignores other branches", GitRepo{}, "refs/heads/feature", "trunk", false},
		{"HEAD, default branch unknown", GitRepo{}, "refs/heads/feature", "", true},
		{"HEAD ignores tags", GitRepo{}, "refs/tags/v1", "", false},
		{"revision tag pushed", GitRepo{Revision: "v1.2.0"}, "refs/tags/v1.2.0", "main", true},
		{"revision names a branch", GitRepo{Revision: "release"}, "refs/heads/release", "main", true},
		{"revision, other tag", GitRepo{Revision: "v1.2.0"}, "refs/tags/v1.3.0", "main", false},
		{"revision wins over branch", GitRepo{Branch: "main", Revision: "v1.2.0"}, "refs/heads/main", "main", false},
		{"commit SHA never moves", GitRepo{Revision: sha}, "refs/heads/main", "main", false},
		{"refs unknown: always", GitRepo{Branch: "x", RefUnknown: true}, "refs/heads/main", "main", true},
	} {
		require.Equal(t, tc.want, tc.repo.Follows(tc.ref, tc.defaultBranch), tc.name)
	}
}
