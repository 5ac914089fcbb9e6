// Package cachedir claims a worker's or agent's cache folder for the life of the process and removes what
// processes killed while writing into it left behind. Every cache write goes to a temporary name first
// (.clone-, .tmp-, .put-, .download-) and is renamed into place, so a reader never sees half an entry; a
// SIGKILL between the two leaves the temporary one, which nothing else ever removes.
package cachedir

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"go.uber.org/zap"
)

// The names cache writers give to what they have not renamed into place yet: each writer takes its prefix
// from here, so that the sweep knows every one.
const (
	CloneTemp    = ".clone-"    // a git checkout (gitcache)
	HelmOpTemp   = ".tmp-"      // a HelmOp's generated fleet.yaml (activities)
	PutTemp      = ".put-"      // a stored package (content)
	DownloadTemp = ".download-" // a chart archive (charts)
)

// TempPrefixes are all of them.
var TempPrefixes = []string{CloneTemp, HelmOpTemp, PutTemp, DownloadTemp}

// maxDepth is how deep the temporary entries are: <dir>/content/sha256/ab/.put-* at most.
const maxDepth = 4

// completeMarker marks a finished git checkout (gitcache): nothing inside one is temporary.
const completeMarker = ".flotilla-complete"

// Claim is held for a process's life: a shared lock on <dir>/.in-use, so that several processes may use
// one folder. Before taking it, Claim tries the lock exclusively: it gets it only when no live process uses
// the folder (the kernel drops a dead process's lock), and only then removes the temporary entries, which
// can then be no one's work in progress. It returns the entries it removed.
type Claim struct {
	f *os.File
}

// Take claims dir, creating it when missing.
func Take(dir string) (*Claim, []string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, nil, fmt.Errorf("cache folder %s: %w", dir, err)
	}
	f, err := os.OpenFile(filepath.Join(dir, ".in-use"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, nil, fmt.Errorf("cache folder %s: %w", dir, err)
	}
	var removed []string
	switch err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); {
	case err == nil:
		removed, err = sweep(dir)
		if err != nil {
			f.Close()
			return nil, nil, fmt.Errorf("cache folder %s: %w", dir, err)
		}
	case errors.Is(err, syscall.EWOULDBLOCK):
		// Another live process uses the folder: its temporary entries may be in progress.
	default:
		f.Close()
		return nil, nil, fmt.Errorf("cache folder %s: lock: %w", dir, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH); err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("cache folder %s: lock: %w", dir, err)
	}
	return &Claim{f: f}, removed, nil
}

// TakeLogged is Take for a worker or an agent at start: what it removed is logged.
func TakeLogged(dir string, log *zap.Logger) (*Claim, error) {
	c, removed, err := Take(dir)
	if err != nil {
		return nil, err
	}
	if len(removed) > 0 {
		log.Info("removed what a stopped process left half-written in the cache", zap.String("dir", dir), zap.Strings("entries", removed))
	}
	return c, nil
}

// Release lets the folder go (the process's exit does too).
func (c *Claim) Release() error { return c.f.Close() }

func sweep(dir string) ([]string, error) {
	var removed []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if path == dir {
			return nil
		}
		rel, _ := filepath.Rel(dir, path)
		if isTemp(d.Name()) {
			if err := os.RemoveAll(path); err != nil {
				return err
			}
			removed = append(removed, rel)
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			if strings.Count(rel, string(filepath.Separator))+1 >= maxDepth {
				return fs.SkipDir
			}
			if _, err := os.Lstat(filepath.Join(path, completeMarker)); err == nil {
				return fs.SkipDir
			}
		}
		return nil
	})
	return removed, err
}

func isTemp(name string) bool {
	for _, p := range TempPrefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}
