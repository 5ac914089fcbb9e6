package webhook

import (
	"net/url"
	"regexp"
	"strings"

	"github.com/flotilla-gitops/flotilla/api"
)

// GitRepo is what matching needs to know about one running GitRepo.
type GitRepo struct {
	Name     string
	Repo     string
	Branch   string
	Revision string
	// RefUnknown is set when the branch and revision could not be read, or when the GitRepo names neither
	// and follows HEAD: any push to the repo syncs it, because a needless poll costs one ls-remote while a
	// missed one leaves a commit undeployed.
	RefUnknown bool
	// Namespace is the GitRepo's workspace; empty is fleet-default.
	Namespace string
}

// Key is the GitRepo's identity.
func (g GitRepo) Key() api.GitRepoKey { return api.KeyOf(g.Namespace, g.Name) }

// Push is what a push event says, whichever provider sent it.
type Push struct {
	// Ref is the full ref name, e.g. refs/heads/main or refs/tags/v1.2.0.
	Ref string
	// RepoURLs are every URL the provider gives for the repository (https, ssh, web).
	RepoURLs []string
	// DefaultBranch is the repository's default branch, when the provider says it.
	DefaultBranch string
}

const (
	branchPrefix = "refs/heads/"
	tagPrefix    = "refs/tags/"
)

var commitSHA = regexp.MustCompile(`^([0-9a-f]{40}|[0-9a-f]{64})$`)

// Follows reports whether a push of ref can change the commit a GitRepo resolves, mirroring how
// internal/gitcache resolves it:
//   - revision set: a commit SHA never moves; a tag or branch name moves when that ref is pushed.
//   - branch set: only a push to that branch.
//   - neither: the repository's HEAD, i.e. a push to the default branch (any branch when it is unknown).
//
// Fleet skips GitRepos pinned to a revision altogether; Flotilla's revision may name a branch or a tag that
// is moved, and only a push of that very ref matches, so following it costs nothing otherwise.
func (g GitRepo) Follows(ref, defaultBranch string) bool {
	if g.RefUnknown {
		return true
	}
	if g.Revision != "" {
		if commitSHA.MatchString(strings.ToLower(g.Revision)) {
			return false
		}
		return ref == tagPrefix+g.Revision || ref == branchPrefix+g.Revision
	}
	if !strings.HasPrefix(ref, branchPrefix) {
		return false
	}
	branch := g.Branch
	if branch == "" {
		branch = defaultBranch
	}
	return branch == "" || ref == branchPrefix+branch
}

// scpLike is git's `[user@]host:path` form, which has no scheme.
var scpLike = regexp.MustCompile(`^(?:[^@/]+@)?([^:/]+):(.*)$`)

// NormalizeRepoURL reduces a repository URL to `host/path` so the forms a provider sends (https, ssh,
// scp-like `git@host:org/repo`, git://) compare equal to the one a GitRepo names: no scheme, user, port,
// query or trailing `.git` and slash; lower case, since GitHub and GitLab paths are case-insensitive.
// File URLs keep their path (host empty). An empty or unparsable URL gives "".
func NormalizeRepoURL(raw string) string {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return ""
	}
	var host, path string
	if !strings.Contains(raw, "://") {
		m := scpLike.FindStringSubmatch(raw)
		if m == nil {
			return ""
		}
		host, path = m[1], m[2]
	} else {
		u, err := url.Parse(raw)
		if err != nil {
			return ""
		}
		host, path = u.Hostname(), u.Path
		if host == "" && u.Scheme != "file" {
			return ""
		}
	}
	path = strings.Trim(path, "/")
	path = strings.TrimSuffix(path, ".git")
	path = strings.TrimRight(path, "/")
	if path == "" {
		return ""
	}
	return strings.ToLower(host + "/" + path)
}

// repoSet holds the normalized URLs of one push.
type repoSet map[string]bool

func newRepoSet(urls []string) repoSet {
	s := repoSet{}
	for _, u := range urls {
		if n := NormalizeRepoURL(u); n != "" {
			s[n] = true
		}
	}
	return s
}

func (s repoSet) matches(repo string) bool {
	n := NormalizeRepoURL(repo)
	return n != "" && s[n]
}

// any returns one member, for logs: normalized URLs carry no credentials.
func (s repoSet) any() string {
	best := ""
	for k := range s {
		if best == "" || k < best {
			best = k
		}
	}
	return best
}
