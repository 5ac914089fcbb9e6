// Package safepath confines every file read to a repository checkout. Reads go through an os.Root, which
// resolves each path component by component with openat and refuses any step (a `..`, a symlink, a
// symlink reached through another symlink) that would leave the checkout. Checking link targets as text and
// then opening the path, as this package once did, let a chain of links read the worker's own files.
package safepath

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"sort"
	"strings"
)

// MaxFileSize bounds any one file read from a repository: a values file, a manifest, a chart file. Real
// charts' largest files (CRD bundles) stay well under it; a larger file is a mistake or an attack.
const MaxFileSize = 16 << 20

// EscapeError says a path would leave the repository.
type EscapeError struct {
	Path   string
	Reason string
}

func (e *EscapeError) Error() string { return fmt.Sprintf("%q: %s", e.Path, e.Reason) }

// TooLargeError says a file is over MaxFileSize.
type TooLargeError struct {
	Path  string
	Limit int64
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("%q: file is larger than the %d MiB limit for repository files", e.Path, e.Limit>>20)
}

// clean turns rel into the slash-separated, root-relative form os.Root and io/fs accept, refusing what
// lexically leaves the repository before anything is opened.
func clean(rel string) (string, error) {
	if strings.HasPrefix(rel, "/") {
		return "", &EscapeError{Path: rel, Reason: "is an absolute path; only paths inside the repository are allowed"}
	}
	c := path.Clean(rel)
	if c == ".." || strings.HasPrefix(c, "../") {
		return "", &EscapeError{Path: rel, Reason: "leaves the repository"}
	}
	return c, nil
}

// escaped reports whether err is os.Root refusing a path that resolves outside it. The standard library
// does not export that error, so its fixed text is what identifies it.
func escaped(err error) bool {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return err != nil && err.Error() == "path escapes from parent"
}

func wrap(rel string, err error) error {
	if escaped(err) {
		return &EscapeError{Path: rel, Reason: "goes through a symlink that resolves outside the repository"}
	}
	return err
}

// Repo is a checkout opened for confined reads.
type Repo struct {
	root *os.Root
}

// Open opens the checkout at dir.
func Open(dir string) (*Repo, error) {
	r, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	return &Repo{root: r}, nil
}

// Close releases the checkout's directory handle.
func (r *Repo) Close() error { return r.root.Close() }

// FS is the checkout as an fs.FS whose every operation stays inside it.
func (r *Repo) FS() fs.FS { return r.root.FS() }

// Stat describes rel, following symlinks that stay inside the repository.
func (r *Repo) Stat(rel string) (fs.FileInfo, error) {
	c, err := clean(rel)
	if err != nil {
		return nil, err
	}
	fi, err := r.root.Stat(c)
	return fi, wrap(rel, err)
}

// Check returns nil if rel does not leave the repository, whether or not it exists.
func (r *Repo) Check(rel string) error {
	_, err := r.Stat(rel)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

// ReadFile reads rel, at most MaxFileSize bytes.
func (r *Repo) ReadFile(rel string) ([]byte, error) {
	c, err := clean(rel)
	if err != nil {
		return nil, err
	}
	f, err := r.root.Open(c)
	if err != nil {
		return nil, wrap(rel, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, wrap(rel, err)
	}
	if len(data) > MaxFileSize {
		return nil, &TooLargeError{Path: rel, Limit: MaxFileSize}
	}
	return data, nil
}

// ReadDir lists the folder rel in lexical order, following symlinks that stay inside the repository.
func (r *Repo) ReadDir(rel string) ([]fs.DirEntry, error) {
	c, err := clean(rel)
	if err != nil {
		return nil, err
	}
	entries, err := fs.ReadDir(r.root.FS(), c)
	return entries, wrap(rel, err)
}

// WalkFiles calls fn for every regular file under rel in lexical order, skipping .git. Symlinks to files
// inside the repository are read; a symlink leaving it is an EscapeError. Linked folders are not entered.
func (r *Repo) WalkFiles(rel string, fn func(relPath string, data []byte) error) error {
	base, err := clean(rel)
	if err != nil {
		return err
	}
	fsys := r.root.FS()
	var paths []string
	err = fs.WalkDir(fsys, base, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return wrap(p, err)
		}
		if d.IsDir() && d.Name() == ".git" {
			return fs.SkipDir
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
		st, err := r.Stat(p)
		if err != nil {
			var esc *EscapeError
			if errors.As(err, &esc) {
				return err
			}
			continue // a dangling link is not a file of the bundle
		}
		if !st.Mode().IsRegular() {
			continue
		}
		data, err := r.ReadFile(p)
		if err != nil {
			return err
		}
		if err := fn(p, data); err != nil {
			return err
		}
	}
	return nil
}

// with opens root for one call.
func with[T any](root string, f func(*Repo) (T, error)) (T, error) {
	r, err := Open(root)
	if err != nil {
		var zero T
		return zero, err
	}
	defer r.Close()
	return f(r)
}

// ReadFile reads root/rel without leaving root.
func ReadFile(root, rel string) ([]byte, error) {
	return with(root, func(r *Repo) ([]byte, error) { return r.ReadFile(rel) })
}

// Stat describes root/rel without leaving root.
func Stat(root, rel string) (fs.FileInfo, error) {
	return with(root, func(r *Repo) (fs.FileInfo, error) { return r.Stat(rel) })
}

// Check returns nil if root/rel does not leave root, whether or not it exists.
func Check(root, rel string) error {
	_, err := with(root, func(r *Repo) (struct{}, error) { return struct{}{}, r.Check(rel) })
	return err
}

// WalkFiles is Repo.WalkFiles on root.
func WalkFiles(root, rel string, fn func(relPath string, data []byte) error) error {
	_, err := with(root, func(r *Repo) (struct{}, error) { return struct{}{}, r.WalkFiles(rel, fn) })
	return err
}
