// Package gitcache resolves git revisions with ls-remote and keeps content-addressed checkouts, so an
// unchanged commit costs one ls-remote and never a clone, and any worker can rebuild what it needs.
package gitcache

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/storage/memory"
	"github.com/skeema/knownhosts"

	"github.com/flotilla-gitops/flotilla/internal/cachedir"
	"github.com/flotilla-gitops/flotilla/internal/credentials"
)

// Credentials resolves a GitRepo's clientSecretName on the worker's side (internal/credentials.Store), so
// secrets never travel through Temporal. With a nil Credentials a GitRepo that names a secret fails.
type Credentials interface {
	// For is the secret name as a GitRepo of workspace may use it for url (credentials.Store.For).
	For(workspace, name, url string) (*credentials.Secret, error)
}

// Remote is a repository and how to reach it: a GitRepo's repo, clientSecretName, caBundle and
// insecureSkipTLSVerify.
type Remote struct {
	URL string
	// Workspace is the GitRepo's: a secret is looked up as that workspace may use it.
	Workspace string
	// Secret names the credentials (clientSecretName); empty is anonymous.
	Secret string
	// CABundle is PEM certificates trusted besides the system's for an HTTPS URL.
	CABundle []byte
	// InsecureSkipTLSVerify turns off certificate verification for an HTTPS URL.
	InsecureSkipTLSVerify bool
}

// Cache holds checkouts under Dir/<repo-hash>/<commit>.
type Cache struct {
	Dir   string
	Creds Credentials
	// Keep is how many commits per repository stay on disk (default 5).
	Keep int
	// AllowLocal lets a repository be a folder of this machine (file://, a path): off, a GitRepo could name
	// another workspace's checkout in this very cache, or any repository the worker can read. Only a
	// worker whose GitRepos all come from one trusted party allows it (make up, the tests).
	AllowLocal bool

	mu    sync.Mutex
	locks map[string]*sync.Mutex

	hostKeysMu sync.Mutex
	hostKeys   map[[sha256.Size]byte]*knownhosts.HostKeyDB
}

var fullSHA = regexp.MustCompile(`^[0-9a-f]{40}$`)

// Resolve returns the commit a repository's branch or revision points at, with one ls-remote.
// A full 40-character SHA revision is returned as is, with no network call.
// No error it returns shows the URL's user info, query or fragment.
func (c *Cache) Resolve(ctx context.Context, r Remote, branch, revision string) (string, error) {
	commit, err := c.resolve(ctx, r, branch, revision)
	return commit, sanitizeError(err, r.URL)
}

func (c *Cache) resolve(ctx context.Context, r Remote, branch, revision string) (string, error) {
	if fullSHA.MatchString(revision) {
		return revision, nil
	}
	repo := r.URL
	if err := c.checkRemote(repo); err != nil {
		return "", err
	}
	a, err := c.access(r)
	if err != nil {
		return "", fmt.Errorf("ls-remote %s: %w", Sanitize(repo), err)
	}
	remote := git.NewRemote(memory.NewStorage(), &config.RemoteConfig{Name: "origin", URLs: []string{repo}})
	refs, err := remote.ListContext(ctx, &git.ListOptions{Auth: a.auth, PeelingOption: git.AppendPeeled,
		CABundle: a.caBundle, InsecureSkipTLS: a.insecure})
	if err != nil {
		return "", fmt.Errorf("ls-remote %s: %w", Sanitize(repo), a.explain(err))
	}
	byName := map[string]*plumbing.Reference{}
	for _, ref := range refs {
		byName[ref.Name().String()] = ref
	}
	var candidates []string
	switch {
	case revision != "":
		candidates = []string{"refs/tags/" + revision + "^{}", "refs/tags/" + revision, "refs/heads/" + revision, revision}
	case branch != "":
		candidates = []string{"refs/heads/" + branch}
	default:
		candidates = []string{"HEAD"}
	}
	for _, name := range candidates {
		ref, ok := byName[name]
		if !ok {
			continue
		}
		if ref.Type() == plumbing.SymbolicReference {
			if t, ok := byName[ref.Target().String()]; ok {
				return t.Hash().String(), nil
			}
			continue
		}
		return ref.Hash().String(), nil
	}
	what := "HEAD"
	if revision != "" {
		what = fmt.Sprintf("revision %q", revision)
	} else if branch != "" {
		what = fmt.Sprintf("branch %q", branch)
	}
	return "", &NotFoundError{Repo: Sanitize(repo), What: what}
}

// NotFoundError says a branch, tag or revision does not exist in the repository.
type NotFoundError struct{ Repo, What string }

func (e *NotFoundError) Error() string { return fmt.Sprintf("%s: %s not found", e.Repo, e.What) }

// Checkout returns a directory holding the repository at commit, cloning only when it is not cached.
// Concurrent callers for the same commit share one clone; the directory appears atomically.
// No error it returns shows the URL's user info, query or fragment.
func (c *Cache) Checkout(ctx context.Context, r Remote, commit string) (string, error) {
	dir, err := c.checkout(ctx, r, commit)
	return dir, sanitizeError(err, r.URL)
}

func (c *Cache) checkout(ctx context.Context, r Remote, commit string) (string, error) {
	repo := r.URL
	if !fullSHA.MatchString(commit) {
		return "", fmt.Errorf("checkout %s: %q is not a full commit SHA", Sanitize(repo), commit)
	}
	if err := c.checkRemote(repo); err != nil {
		return "", err
	}
	// A checkout is kept for the credentials that cloned it: a GitRepo naming another's private URL, and
	// a commit it learnt, must clone with its own credentials (and fail without), not find the other's.
	repoDir := filepath.Join(c.Dir, repoKey(repo+"\x00"+r.Workspace+"\x00"+r.Secret))
	dir := filepath.Join(repoDir, commit)
	if _, err := os.Stat(filepath.Join(dir, ".flotilla-complete")); err == nil {
		return dir, nil
	}
	lock := c.lock(dir)
	lock.Lock()
	defer lock.Unlock()
	if _, err := os.Stat(filepath.Join(dir, ".flotilla-complete")); err == nil {
		return dir, nil
	}
	a, err := c.access(r)
	if err != nil {
		return "", fmt.Errorf("clone %s: %w", Sanitize(repo), err)
	}
	if err := os.MkdirAll(repoDir, 0o755); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(repoDir, cachedir.CloneTemp)
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	if err := clone(ctx, tmp, repo, commit, a); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(tmp, ".flotilla-complete"), nil, 0o644); err != nil {
		return "", err
	}
	_ = os.RemoveAll(dir)
	if err := os.Rename(tmp, dir); err != nil {
		return "", err
	}
	c.prune(repoDir, commit)
	return dir, nil
}

func clone(ctx context.Context, dir, repo, commit string, a access) error {
	r, err := git.PlainCloneContext(ctx, dir, false, &git.CloneOptions{URL: repo, Auth: a.auth, NoCheckout: true, Tags: git.NoTags,
		CABundle: a.caBundle, InsecureSkipTLS: a.insecure})
	if err != nil {
		return fmt.Errorf("clone %s: %w", Sanitize(repo), a.explain(err))
	}
	wt, err := r.Worktree()
	if err != nil {
		return err
	}
	if err := wt.Checkout(&git.CheckoutOptions{Hash: plumbing.NewHash(commit), Force: true}); err != nil {
		if errors.Is(err, plumbing.ErrObjectNotFound) {
			return fmt.Errorf("clone %s: commit %s not found", Sanitize(repo), commit)
		}
		return fmt.Errorf("checkout %s at %s: %w", Sanitize(repo), commit, err)
	}
	return nil
}

func (c *Cache) lock(key string) *sync.Mutex {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.locks == nil {
		c.locks = map[string]*sync.Mutex{}
	}
	l, ok := c.locks[key]
	if !ok {
		l = &sync.Mutex{}
		c.locks[key] = l
	}
	return l
}

// prune keeps the newest Keep checkouts of a repository besides the current one.
func (c *Cache) prune(repoDir, current string) {
	keep := c.Keep
	if keep <= 0 {
		keep = 5
	}
	entries, err := os.ReadDir(repoDir)
	if err != nil {
		return
	}
	type item struct {
		name string
		mod  int64
	}
	var items []item
	for _, e := range entries {
		if !e.IsDir() || strings.HasPrefix(e.Name(), ".") || e.Name() == current {
			continue
		}
		if info, err := e.Info(); err == nil {
			items = append(items, item{e.Name(), info.ModTime().UnixNano()})
		}
	}
	sort.Slice(items, func(i, j int) bool { return items[i].mod > items[j].mod })
	for i, it := range items {
		if i >= keep-1 {
			_ = os.RemoveAll(filepath.Join(repoDir, it.name))
		}
	}
}

// ErrLocalRepo refuses a repository that is a folder of the worker's machine (see Cache.AllowLocal).
var ErrLocalRepo = errors.New("a repository on the worker's own disk (file:// or a path) is refused: any workspace could name " +
	"another's checkout or any folder the worker can read; an operator allows them with flotilla-worker --allow-local-repos " +
	"(FLOTILLA_ALLOW_LOCAL_REPOS=1)")

// checkRemote refuses what cannot be parsed and, unless allowed, a local repository.
func (c *Cache) checkRemote(repo string) error {
	if err := checkParses(repo); err != nil {
		return err
	}
	if !c.AllowLocal && IsLocal(repo) {
		return fmt.Errorf("%s: %w", Sanitize(repo), ErrLocalRepo)
	}
	return nil
}

// IsLocal reports whether go-git would read repo from this machine's disk rather than over a network.
func IsLocal(repo string) bool {
	ep, err := transport.NewEndpoint(repo)
	return err != nil || ep.Protocol == "file"
}

func repoKey(repo string) string {
	sum := sha256.Sum256([]byte(repo))
	return hex.EncodeToString(sum[:8])
}
