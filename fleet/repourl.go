package fleet

import (
	"errors"
	"net/url"
	"regexp"
	"strings"
)

// RepoURLError names the part of a repository URL that is refused. It never holds the URL: the part it
// names may be a credential.
type RepoURLError struct {
	// Part is what the URL holds, e.g. "a password in the URL's user part".
	Part string
}

func (e *RepoURLError) Error() string {
	return e.Part + " is not allowed; name git credentials with spec.clientSecretName"
}

var errNotAURL = errors.New("not a URL git can use (it is not repeated here: it may hold credentials)")

// CheckRepoURL refuses a git repository URL that carries credentials, in every form git takes: a URL
// (https://user:password@host/..., https://TOKEN@host/..., ssh://git:password@host/...), scp-style
// (user:password@host:org/repo.git), and a query string or a fragment anywhere, which git never needs and
// where tokens hide (?private_token=...). The URL goes into workflow inputs, search attributes and errors,
// so what it must not hold is refused before it gets there. Over SSH a user part alone (git@) is the
// account, not a secret; over HTTP(S) a user part alone is as often a token, so it is refused too.
// Errors name the part, never the URL. Plain forms pass: https://host/org/repo, ssh://git@host/org/repo,
// git@host:org/repo.git, file:///srv/git/repo and local paths.
func CheckRepoURL(repo string) error {
	if isURLForm(repo) {
		if err := checkURLForm(repo); err != nil {
			return err
		}
	} else if isSCPLike(repo) {
		if err := checkSCPForm(repo); err != nil {
			return err
		}
	}
	switch {
	case strings.Contains(repo, "?"):
		return &RepoURLError{Part: "a query string ('?'; git needs none)"}
	case strings.Contains(repo, "#"):
		return &RepoURLError{Part: "a fragment ('#'; git needs none)"}
	}
	return nil
}

func checkURLForm(repo string) error {
	u, err := url.Parse(repo)
	if err != nil {
		// url.Parse's error repeats the URL, password included.
		return errNotAURL
	}
	if u.User == nil {
		return nil
	}
	if _, hasPassword := u.User.Password(); hasPassword {
		return &RepoURLError{Part: "a password in the URL's user part"}
	}
	switch u.Scheme {
	case "ssh", "git+ssh", "ssh+git":
		return nil
	case "http", "https":
		return &RepoURLError{Part: "a user part in an HTTP(S) URL (where tokens go)"}
	case "":
		// git's scheme holds a slash ("//u@h://..."): no scheme at all to name, and none git can use.
		return errNotAURL
	}
	return &RepoURLError{Part: "a user part in a " + u.Scheme + ":// URL (only SSH takes one)"}
}

// isURLForm is go-git's test for a URL (git's is alike): "://" at the first colon. A "://" further on
// leaves user:password@host:path/a://b scp-like, with its password.
func isURLForm(repo string) bool {
	colon := strings.IndexByte(repo, ':')
	return colon > 0 && strings.HasPrefix(repo[colon:], "://")
}

// isSCPLike is git's test for [user@]host:path: a colon before any slash (even first: go-git reads
// :token@host:path as the user :token).
func isSCPLike(repo string) bool {
	colon := strings.IndexByte(repo, ':')
	slash := strings.IndexByte(repo, '/')
	return colon >= 0 && (slash < 0 || colon < slash)
}

// goGitSCPLike is how go-git, which the worker clones with, reads [user@]host:[port:]path
// (go-git/v5/internal/url): its user part runs to the first '@', slashes included.
var goGitSCPLike = regexp.MustCompile(`^(?:(?P<user>[^@]+)@)?(?P<host>[^:\s]+):(?:(?P<port>[0-9]{1,5}):)?(?P<path>[^\\].*)$`)

// checkSCPForm refuses a password in the user part of user@host:path. The user part runs to the last '@'
// before the path's first slash, so a password holding '@' is still found whole; and to the first '@' as
// go-git reads it, so a password holding '/' is too.
func checkSCPForm(repo string) error {
	head := repo
	if slash := strings.IndexByte(repo, '/'); slash >= 0 {
		head = repo[:slash]
	}
	at := strings.LastIndexByte(head, '@')
	if at >= 0 && strings.Contains(head[:at], ":") {
		return &RepoURLError{Part: "a password in the URL's user part"}
	}
	if m := goGitSCPLike.FindStringSubmatch(repo); m != nil && strings.Contains(m[1], ":") {
		return &RepoURLError{Part: "a password in the URL's user part"}
	}
	return nil
}
