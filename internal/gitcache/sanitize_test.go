package gitcache

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSanitizeStripsUserInfoQueryAndFragmentFromEveryURLInAText(t *testing.T) {
	for in, want := range map[string]string{
		"https://user:secret@git.example.com/org/repo.git?token=abc": "https://git.example.com/org/repo.git",
		"https://git.example.com/org/repo.git#SECRET":                "https://git.example.com/org/repo.git",
		"ssh://git:SECRET@git.example.com:2222/org/repo.git":         "ssh://git.example.com:2222/org/repo.git",
		"git:SECRET@git.example.com:org/repo.git":                    "git.example.com:org/repo.git",
		"git.example.com:org/repo.git?token=SECRET":                  "git.example.com:org/repo.git",
		"dial git:SECRET@git.example.com: refused":                   "dial git.example.com: refused",
		"https://user:SE/CR@ET@git.example.com/org/repo.git":         "https://git.example.com/org/repo.git",
		`ls-remote: Get "http://user:***@127.0.0.1:1/org/repo.git?x=SECRET/info/refs?service=git-upload-pack": dial tcp 127.0.0.1:1: connect: connection refused`: `ls-remote: Get "http://127.0.0.1:1/org/repo.git": dial tcp 127.0.0.1:1: connect: connection refused`,
		`clone (https://TOKEN@github.com/org/repo): repository not found`:                                                                                         `clone (https://github.com/org/repo): repository not found`,
		// Text without a URL is left alone.
		`branch "main" not found`:                      `branch "main" not found`,
		"file:///srv/git/repo: reference not found":    "file:///srv/git/repo: reference not found",
		"commit by t@example.com: object not found":    "commit by t@example.com: object not found",
		"web/fleet.yaml: line 3: mapping key repeated": "web/fleet.yaml: line 3: mapping key repeated",
	} {
		require.Equal(t, want, Sanitize(in), in)
	}
}

// closedPort is a loopback address nothing listens on: connecting fails at once.
func closedPort(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	return addr
}

// requireNoSecret checks an error and every error it wraps: Temporal records each as a failure cause.
func requireNoSecret(t *testing.T, err error, secrets ...string) {
	t.Helper()
	require.Error(t, err)
	for e := err; e != nil; e = errors.Unwrap(e) {
		for _, s := range secrets {
			require.NotContains(t, e.Error(), s)
		}
	}
}

func TestGitErrorsNeverShowTheURLsCredentials(t *testing.T) {
	t.Setenv("SSH_AUTH_SOCK", "") // an SSH URL fails before any connection, the same on every machine
	c := &Cache{Dir: t.TempDir()}
	ctx := context.Background()
	sha := strings.Repeat("a", 40)
	for _, repo := range []string{
		"http://user:PASSWORD@" + closedPort(t) + "/org/repo.git?private_token=QUERYTOKEN#FRAGMENT",
		"http://TOKENUSER@" + closedPort(t) + "/org/repo.git",
		"git:PASSWORD@127.0.0.1:org/repo.git",
		"ssh://git:PASSWORD@" + closedPort(t) + "/org/repo.git",
		"https://user:PASS/WORD@127.0.0.1/org/repo.git",
	} {
		_, err := c.Resolve(ctx, Remote{URL: repo}, "main", "")
		requireNoSecret(t, err, "PASSWORD", "PASS/", "QUERYTOKEN", "FRAGMENT", "TOKENUSER", "private_token")
		_, err = c.Checkout(ctx, Remote{URL: repo}, sha)
		requireNoSecret(t, err, "PASSWORD", "PASS/", "QUERYTOKEN", "FRAGMENT", "TOKENUSER", "private_token")
	}

	canceled, cancel := context.WithCancel(ctx)
	cancel()
	_, err := c.Resolve(canceled, Remote{URL: "http://" + closedPort(t) + "/org/repo.git?private_token=QUERYTOKEN"}, "main", "")
	requireNoSecret(t, err, "QUERYTOKEN")
	require.ErrorIs(t, err, context.Canceled, "a cleaned error is still recognisable")
}
