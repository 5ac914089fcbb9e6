// Package safepath confines every file read to a repository checkout: no absolute paths, no `../` past
// the root, and no symlink that resolves outside it.
package safepath

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// EscapeError says a path would leave the repository.
type EscapeError struct {
	Path   string
	Reason string
}

func (e *EscapeError) Error() string { return fmt.Sprintf("%q: %s", e.Path, e.Reason) }

func within(root, p string) bool {
	return p == root || strings.HasPrefix(p, root+string(filepath.Separator))
}

// Join returns root/rel after checking that it stays inside root, symlinks included.
func Join(root, rel string) (string, error) {
	if filepath.IsAbs(rel) || strings.HasPrefix(rel, "/") {
		return "", &EscapeError{Path: rel, Reason: "is an absolute path; only paths inside the repository are allowed"}
	}
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		return "", err
	}
	realRoot, _ = filepath.Abs(realRoot)
	joined := filepath.Join(realRoot, filepath.FromSlash(rel))
	if !within(realRoot, joined) {
		return "", &EscapeError{Path: rel, Reason: "leaves the repository"}
	}
	// Follow the path one component at a time, so that any symlink on the way, even a dangling one, is
	// judged by where it points.
	rest, _ := filepath.Rel(realRoot, joined)
	cur := realRoot
	comps := strings.Split(rest, string(filepath.Separator))
	for i, comp := range comps {
		if comp == "." || comp == "" {
			continue
		}
		next := filepath.Join(cur, comp)
		for hops := 0; ; hops++ {
			fi, err := os.Lstat(next)
			if os.IsNotExist(err) {
				return filepath.Join(append([]string{next}, comps[i+1:]...)...), nil
			}
			if err != nil {
				return "", err
			}
			if fi.Mode()&os.ModeSymlink == 0 {
				break
			}
			if hops > 40 {
				return "", &EscapeError{Path: rel, Reason: "has too many levels of symlinks"}
			}
			target, err := os.Readlink(next)
			if err != nil {
				return "", err
			}
			if !filepath.IsAbs(target) {
				target = filepath.Join(filepath.Dir(next), target)
			}
			next = filepath.Clean(target)
			if !within(realRoot, next) {
				return "", &EscapeError{Path: rel, Reason: "is a symlink that resolves outside the repository"}
			}
		}
		cur = next
	}
	return cur, nil
}

// ReadFile reads root/rel after Join's checks.
func ReadFile(root, rel string) ([]byte, error) {
	p, err := Join(root, rel)
	if err != nil {
		return nil, err
	}
	return os.ReadFile(p)
}

// WalkFiles calls fn for every regular file under root/rel in lexical order, skipping .git. Symlinks to
// files inside the repository are followed; a symlink leaving it is an EscapeError.
func WalkFiles(root, rel string, fn func(relPath string, data []byte) error) error {
	base, err := Join(root, rel)
	if err != nil {
		return err
	}
	realRoot, _ := filepath.EvalSymlinks(root)
	realRoot, _ = filepath.Abs(realRoot)
	var paths []string
	err = filepath.WalkDir(base, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == ".git" {
			return filepath.SkipDir
		}
		if !d.IsDir() {
			paths = append(paths, p)
		}
		return nil
	})
	if err != nil {
		return err
	}
	sort.Strings(paths)
	for _, p := range paths {
		r, _ := filepath.Rel(realRoot, p)
		r = filepath.ToSlash(r)
		info, err := os.Lstat(p)
		if err != nil {
			return err
		}
		if info.Mode()&os.ModeSymlink != 0 {
			if _, err := Join(root, r); err != nil {
				return err
			}
			st, err := os.Stat(p)
			if err != nil || !st.Mode().IsRegular() {
				continue
			}
		} else if !info.Mode().IsRegular() {
			continue
		}
		data, err := ReadFile(root, r)
		if err != nil {
			return err
		}
		if err := fn(r, data); err != nil {
			return err
		}
	}
	return nil
}
