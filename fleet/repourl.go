package fleet

import (
	"errors"
	"net/url"
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
	if strings.Contains(repo, "://") {
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
	}
	return &RepoURLError{Part: "a user part in a " + u.Scheme + ":// URL (only SSH takes one)"}
}

// isSCPLike is git's test for [user@]host:path: a colon before any slash.
func isSCPLike(repo string) bool {
	colon := strings.IndexByte(repo, ':')
	slash := strings.IndexByte(repo, '/')
	return colon > 0 && (slash < 0 || colon < slash)
}

// checkSCPForm refuses a password in the user part of user@host:path. The user part runs to the last '@'
// before the path's first slash, so a password holding '@' is still found whole.
func checkSCPForm(repo string) error {
	head := repo
	if slash := strings.IndexByte(repo, '/'); slash >= 0 {
		head = repo[:slash]
	}
	at := strings.LastIndexByte(head, '@')
	if at >= 0 && strings.Contains(head[:at], ":") {
		return &RepoURLError{Part: "a password in the URL's user part"}
	}
	return nil
}
