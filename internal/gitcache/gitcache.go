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
	"github.com/go-git/go-git/v5/plumbing/transport/http"
	"github.com/go-git/go-git/v5/storage/memory"
)

// Credentials resolves a GitRepo's clientSecretName to transport auth on the worker's side, so
// secrets never travel through Temporal. A nil Credentials means anonymous access only.
type Credentials interface {
	Auth(name string) (transport.AuthMethod, error)
}

// Cache holds checkouts under Dir/<repo-hash>/<commit>.
type Cache struct {
	Dir   string
	Creds Credentials
	// Keep is how many commits per repository stay on disk (default 5).
	Keep int

	mu    sync.Mutex
	locks map[string]*sync.Mutex
}

var fullSHA = regexp.MustCompile(`^[0-9a-f]{40}$`)

func (c *Cache) auth(secret string) (transport.AuthMethod, error) {
	if secret == "" {
		return nil, nil
	}
	if c.Creds == nil {
		return nil, fmt.Errorf("clientSecretName %q: the worker has no git credentials configured", secret)
	}
	return c.Creds.Auth(secret)
}

// Resolve returns the commit a repository's branch or revision points at, with one ls-remote.
// A full 40-character SHA revision is returned as is, with no network call.
// No error it returns shows the URL's user info, query or fragment.
func (c *Cache) Resolve(ctx context.Context, repo, branch, revision, secret string) (string, error) {
	commit, err := c.resolve(ctx, repo, branch, revision, secret)
	return commit, sanitizeError(err, repo)
}

func (c *Cache) resolve(ctx context.Context, repo, branch, revision, secret string) (string, error) {
	if fullSHA.MatchString(revision) {
		return revision, nil
	}
	if err := checkParses(repo); err != nil {
		return "", err
	}
	auth, err := c.auth(secret)
	if err != nil {
		return "", err
	}
	remote := git.NewRemote(memory.NewStorage(), &config.RemoteConfig{Name: "origin", URLs: []string{repo}})
	refs, err := remote.ListContext(ctx, &git.ListOptions{Auth: auth, PeelingOption: git.AppendPeeled})
	if err != nil {
		return "", fmt.Errorf("ls-remote %s: %w", Sanitize(repo), err)
	}
	byName := map[string]*plumbing.Reference{}
	for _, r := range refs {
		byName[r.Name().String()] = r
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
		r, ok := byName[name]
		if !ok {
			continue
		}
		if r.Type() == plumbing.SymbolicReference {
			if t, ok := byName[r.Target().String()]; ok {
				return t.Hash().String(), nil
			}
			continue
		}
		return r.Hash().String(), nil
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
func (c *Cache) Checkout(ctx context.Context, repo, commit, secret string) (string, error) {
	dir, err := c.checkout(ctx, repo, commit, secret)
	return dir, sanitizeError(err, repo)
}

func (c *Cache) checkout(ctx context.Context, repo, commit, secret string) (string, error) {
	if !fullSHA.MatchString(commit) {
		return "", fmt.Errorf("checkout %s: %q is not a full commit SHA", Sanitize(repo), commit)
	}
	if err := checkParses(repo); err != nil {
		return "", err
	}
	repoDir := filepath.Join(c.Dir, repoKey(repo))
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
	auth, err := c.auth(secret)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(repoDir, 0o755); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(repoDir, ".clone-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	if err := clone(ctx, tmp, repo, commit, auth); err != nil {
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

func clone(ctx context.Context, dir, repo, commit string, auth transport.AuthMethod) error {
	r, err := git.PlainCloneContext(ctx, dir, false, &git.CloneOptions{URL: repo, Auth: auth, NoCheckout: true, Tags: git.NoTags})
	if err != nil {
		return fmt.Errorf("clone %s: %w", Sanitize(repo), err)
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

func repoKey(repo string) string {
	sum := sha256.Sum256([]byte(repo))
	return hex.EncodeToString(sum[:8])
}

// BasicAuth is a Credentials holding username/password (or token) pairs by name.
type BasicAuth map[string]struct{ Username, Password string }

// Auth implements Credentials.
func (b BasicAuth) Auth(name string) (transport.AuthMethod, error) {
	v, ok := b[name]
	if !ok {
		return nil, fmt.Errorf("clientSecretName %q: no such git credential on the worker", name)
	}
	return &http.BasicAuth{Username: v.Username, Password: v.Password}, nil
}
