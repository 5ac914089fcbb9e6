package render

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/flotilla-gitops/flotilla/fleet/safepath"
	"github.com/flotilla-gitops/flotilla/internal/bytesize"
)

// MaxKustomizeRead bounds the bytes one kustomize build may read from the repository, every read
// counted, re-reads too. Real kustomizations read well under a MiB; a few large CRD bundles stay far
// below this. A build that reads more is refused rather than left to fill the worker's memory.
const MaxKustomizeRead = 64 << 20

// kustomizeMount is where the repository appears to kustomize, which works in absolute paths. Errors
// are given back with it removed, so they name repository paths.
const kustomizeMount = "/repo"

// repoFS is the checkout as a read-only kustomize file system. Kustomize reads lazily through it, so a
// build reads only what its kustomizations name. Every read stays inside the repository (safepath's
// os.Root), counts against a budget, and is checked for references kustomize would fetch from the
// network. Kustomize swallows some errors (a kustomization file it cannot read is "missing"), so the
// first refusal is kept and reported whatever kustomize makes of it.
type repoFS struct {
	repo    *safepath.Repo
	limit   int64
	read    int64
	refused error
	// pluginSources are the folders generators, transformers and validators are taken from.
	pluginSources map[string]bool
	// overlay holds files that exist only for this build, over the repository's (a chart's rendered
	// output, the kustomization that lists it), by repository path. They are read, counted and checked
	// like the repository's own.
	overlay map[string][]byte
	// reads, when not nil, records what the build read: each file's repository path and content.
	reads map[string][]byte
}

var _ filesys.FileSystem = (*repoFS)(nil)

func newRepoFS(repo *safepath.Repo, limit int64) *repoFS {
	return &repoFS{repo: repo, limit: limit, pluginSources: map[string]bool{}}
}

// refuse records the first refusal and returns err.
func (f *repoFS) refuse(err error) error {
	if f.refused == nil {
		f.refused = err
	}
	return err
}

// rel maps a kustomize path to a repository path; anything outside the mount leaves the repository.
func (f *repoFS) rel(p string) (string, error) {
	if !filepath.IsAbs(p) {
		p = filepath.Join(kustomizeMount, p)
	}
	c := filepath.ToSlash(filepath.Clean(p))
	if c == kustomizeMount {
		return ".", nil
	}
	if rel, ok := strings.CutPrefix(c, kustomizeMount+"/"); ok {
		return rel, nil
	}
	return "", f.refuse(&safepath.EscapeError{Path: shown(p), Reason: "leaves the repository"})
}

// stat describes p; an escape is a refusal, a missing path is fs.ErrNotExist.
func (f *repoFS) stat(p string) (string, fs.FileInfo, error) {
	rel, err := f.rel(p)
	if err != nil {
		return "", nil, err
	}
	if data, ok := f.overlay[rel]; ok {
		return rel, overlayInfo{name: path.Base(rel), size: int64(len(data))}, nil
	}
	fi, err := f.repo.Stat(rel)
	var esc *safepath.EscapeError
	if errors.As(err, &esc) {
		return rel, nil, f.refuse(err)
	}
	return rel, fi, err
}

func (f *repoFS) ReadFile(p string) ([]byte, error) {
	data, _, err := f.readFile(p)
	return data, err
}

func (f *repoFS) readFile(p string) ([]byte, fs.FileInfo, error) {
	rel, fi, err := f.stat(p)
	if err != nil {
		return nil, nil, err
	}
	if fi.IsDir() {
		return nil, nil, fmt.Errorf("%s: is a folder, not a file", rel)
	}
	if f.read+fi.Size() > f.limit {
		return nil, nil, f.refuse(fmt.Errorf("%s: the build would read more than the %s a kustomize build may read from the repository",
			rel, bytesize.Format(f.limit)))
	}
	data, ok := f.overlay[rel]
	if !ok {
		if data, err = f.repo.ReadFile(rel); err != nil {
			var big *safepath.TooLargeError
			if errors.As(err, &big) {
				return nil, nil, f.refuse(err)
			}
			return nil, nil, err
		}
	}
	f.read += int64(len(data))
	if f.reads != nil {
		f.reads[rel] = data
	}
	if err := f.checkNoRemote(rel, data); err != nil {
		return nil, nil, f.refuse(err)
	}
	return data, fi, nil
}

func (f *repoFS) Open(p string) (filesys.File, error) {
	data, fi, err := f.readFile(p)
	if err != nil {
		return nil, err
	}
	return &readOnlyFile{Reader: bytes.NewReader(data), info: fi}, nil
}

func (f *repoFS) Exists(p string) bool {
	_, _, err := f.stat(p)
	return err == nil
}

func (f *repoFS) IsDir(p string) bool {
	_, fi, err := f.stat(p)
	return err == nil && fi.IsDir()
}

// CleanedAbs splits p into its folder and file name, as kustomize's loader confirms folders. Symlinks
// are not resolved into the path: the repository resolves them on every read, inside itself.
func (f *repoFS) CleanedAbs(p string) (filesys.ConfirmedDir, string, error) {
	rel, fi, err := f.stat(p)
	if err != nil {
		return "", "", err
	}
	abs := mounted(rel)
	if fi.IsDir() {
		return filesys.ConfirmedDir(abs), "", nil
	}
	return filesys.ConfirmedDir(filepath.Dir(abs)), filepath.Base(abs), nil
}

func (f *repoFS) ReadDir(p string) ([]string, error) {
	rel, err := f.rel(p)
	if err != nil {
		return nil, err
	}
	entries, err := f.repo.ReadDir(rel)
	var esc *safepath.EscapeError
	if errors.As(err, &esc) {
		return nil, f.refuse(err)
	}
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		if _, over := f.overlay[path.Join(rel, e.Name())]; !over {
			names = append(names, e.Name())
		}
	}
	for p := range f.overlay {
		if path.Dir(p) == rel {
			names = append(names, path.Base(p))
		}
	}
	sort.Strings(names)
	return names, nil
}

// Glob and Walk serve `kustomize localize` and `edit`, never a build: refused rather than left untested.
func (f *repoFS) Glob(pattern string) ([]string, error) {
	return nil, f.refuse(fmt.Errorf("%s: kustomize may not glob in the repository", shown(pattern)))
}

func (f *repoFS) Walk(p string, _ filepath.WalkFunc) error {
	return f.refuse(fmt.Errorf("%s: kustomize may not walk the repository", shown(p)))
}

func (f *repoFS) Create(p string) (filesys.File, error) { return nil, f.readOnly(p) }
func (f *repoFS) Mkdir(p string) error                  { return f.readOnly(p) }
func (f *repoFS) MkdirAll(p string) error               { return f.readOnly(p) }
func (f *repoFS) RemoveAll(p string) error              { return f.readOnly(p) }
func (f *repoFS) WriteFile(p string, _ []byte) error    { return f.readOnly(p) }

func (f *repoFS) readOnly(p string) error {
	return f.refuse(fmt.Errorf("%s: kustomize may not write to the repository", shown(p)))
}

// readOnlyFile is a file kustomize opened; writing to it fails.
type readOnlyFile struct {
	*bytes.Reader
	info fs.FileInfo
}

func (r *readOnlyFile) Write([]byte) (int, error) {
	return 0, fmt.Errorf("%s: kustomize may not write to the repository", r.info.Name())
}
func (r *readOnlyFile) Close() error               { return nil }
func (r *readOnlyFile) Stat() (os.FileInfo, error) { return r.info, nil }

// overlayInfo describes an overlay file.
type overlayInfo struct {
	name string
	size int64
}

func (i overlayInfo) Name() string       { return i.name }
func (i overlayInfo) Size() int64        { return i.size }
func (i overlayInfo) Mode() fs.FileMode  { return 0o444 }
func (i overlayInfo) ModTime() time.Time { return time.Time{} }
func (i overlayInfo) IsDir() bool        { return false }
func (i overlayInfo) Sys() any           { return nil }

// mounted is the kustomize path of a repository path.
func mounted(rel string) string {
	if rel == "." {
		return kustomizeMount
	}
	return kustomizeMount + "/" + rel
}

// shown is a kustomize path as the repository names it.
func shown(p string) string {
	if rel, ok := strings.CutPrefix(filepath.ToSlash(p), kustomizeMount+"/"); ok {
		return rel
	}
	return p
}
