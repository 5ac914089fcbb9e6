package fleet

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestARepoURLCarryingCredentialsIsRefusedByThePartNeverByTheURL(t *testing.T) {
	for _, tc := range []struct{ repo, part, secret string }{
		{"https://git.example.com/org/repo.git?private_token=SECRET", "a query string", "SECRET"},
		{"https://git.example.com/org/repo.git?", "a query string", ""},
		{"https://git.example.com/org/repo.git#SECRET", "a fragment", "SECRET"},
		{"git@git.example.com:org/repo.git?token=SECRET", "a query string", "SECRET"},
		{"/srv/git/repo#SECRET", "a fragment", "SECRET"},
		{"user:SECRET@git.example.com:org/repo.git", "a password in the URL's user part", "SECRET"},
		{"user:SE@CRET@git.example.com:org/repo.git", "a password in the URL's user part", "CRET"},
		{"user:SECRET@git.example.com:repo.git", "a password in the URL's user part", "SECRET"},
		{"user:SECRET@git.example.com", "a password in the URL's user part", "SECRET"},
		{"ssh://git:SECRET@git.example.com/org/repo.git", "a password in the URL's user part", "SECRET"},
		{"SSH://git:SECRET@git.example.com/org/repo.git", "a password in the URL's user part", "SECRET"},
		{"https://user:SECRET@git.example.com/org/repo.git", "a password in the URL's user part", "SECRET"},
		{"https://user:@git.example.com/org/repo.git", "a password in the URL's user part", ""},
		{"https://SECRET@git.example.com/org/repo.git", "a user part in an HTTP(S) URL", "SECRET"},
		{"http://SECRET@git.local/repo", "a user part in an HTTP(S) URL", "SECRET"},
		{"git://SECRET@git.example.com/org/repo.git", "a user part in a git:// URL", "SECRET"},
		{"file://SECRET@/srv/git/repo", "a user part in a file:// URL", "SECRET"},
		{"https://user:SE%zzCRET@git.example.com/org/repo.git", "not a URL git can use", "CRET"},
		{"https://user:SE/CRET@git.example.com/org/repo.git", "not a URL git can use", "CRET"},
		{"//SECRET@git.example.com://org/repo.git", "not a URL git can use", "SECRET"},
	} {
		err := CheckRepoURL(tc.repo)
		require.Error(t, err, tc.repo)
		require.Contains(t, err.Error(), tc.part, tc.repo)
		if tc.secret != "" {
			require.NotContains(t, err.Error(), tc.secret, "%s: the error never repeats the secret", tc.repo)
		}
		require.NotContains(t, err.Error(), "git.example.com", "%s: nor the URL", tc.repo)
	}
}

func TestPlainRepoURLsPass(t *testing.T) {
	for _, repo := range []string{
		"https://github.com/org/repo", "https://github.com/org/repo.git", "http://git.local:3000/org/repo.git",
		"ssh://git@github.com/org/repo.git", "ssh://git@github.com:2222/org/repo.git", "git+ssh://git@host/org/repo",
		"git@github.com:org/repo.git", "github.com:org/repo.git", "git://git.example.com/org/repo.git",
		"file:///srv/git/repo", "file:///tmp/TestDeploy123/001/repo", "/srv/git/repo", "./repo", "../repos/web",
	} {
		require.NoError(t, CheckRepoURL(repo), repo)
	}
}
