package charts

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"helm.sh/helm/v3/pkg/chart/loader"

	"github.com/flotilla-gitops/flotilla/internal/cachedir"
)

// Archives are kept on disk by digest, <Dir>/sha256/<hex>.tgz, so they outlive the process; their
// expanded files are also kept in memory, so that a render on a cache hit neither reads nor hashes nor
// decompresses anything: it only parses (each caller gets a chart of its own, as Helm mutates charts).

// parseDigest checks a "sha256:<hex>" digest and returns the hex.
func parseDigest(d string) (string, error) {
	hexPart, ok := strings.CutPrefix(d, "sha256:")
	if !ok || len(hexPart) != 64 {
		return "", fmt.Errorf("digest %q is not sha256:<64 hex digits>", d)
	}
	if _, err := hex.DecodeString(hexPart); err != nil {
		return "", fmt.Errorf("digest %q is not sha256:<64 hex digits>", d)
	}
	return strings.ToLower(hexPart), nil
}

func digestOf(data []byte) string {
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])
}

func (f *Fetcher) archivePath(hexDigest string) string {
	return filepath.Join(f.Dir, "sha256", hexDigest+".tgz")
}

// cached is the archive of digest from disk, hashed on its first read by this process: a file that does
// not hash to its name (a torn or tampered write) is removed and reported missing.
func (f *Fetcher) cached(digest string) ([]byte, bool) {
	hexDigest, err := parseDigest(digest)
	if err != nil || f.Dir == "" {
		return nil, false
	}
	p := f.archivePath(hexDigest)
	data, err := os.ReadFile(p)
	if err != nil {
		return nil, false
	}
	f.mu.Lock()
	verified := f.verified[hexDigest]
	f.mu.Unlock()
	if !verified {
		if digestOf(data) != "sha256:"+hexDigest {
			_ = os.Remove(p)
			return nil, false
		}
		f.mu.Lock()
		f.verified[hexDigest] = true
		f.mu.Unlock()
	}
	return data, true
}

// hasCached reports whether the archive of digest is on disk and sound. Once verified by this process a
// file is only looked up: Resolve asks at every poll.
func (f *Fetcher) hasCached(digest string) bool {
	hexDigest, err := parseDigest(digest)
	if err != nil || f.Dir == "" {
		return false
	}
	f.mu.Lock()
	verified := f.verified[hexDigest]
	f.mu.Unlock()
	if verified {
		if _, err := os.Stat(f.archivePath(hexDigest)); err == nil {
			return true
		}
	}
	_, ok := f.cached(digest)
	return ok
}

// store writes an archive whose digest the caller computed: to a temporary file renamed into place, so
// a reader never sees half an archive.
func (f *Fetcher) store(digest string, data []byte) error {
	hexDigest, err := parseDigest(digest)
	if err != nil {
		return err
	}
	if f.Dir == "" {
		return errors.New("charts: the Fetcher has no cache directory")
	}
	dir := filepath.Join(f.Dir, "sha256")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("chart cache: %w", err)
	}
	tmp, err := os.CreateTemp(dir, cachedir.DownloadTemp+"*")
	if err != nil {
		return fmt.Errorf("chart cache: %w", err)
	}
	_, werr := tmp.Write(data)
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr); err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("chart cache: %w", err)
	}
	if err := os.Rename(tmp.Name(), f.archivePath(hexDigest)); err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("chart cache: %w", err)
	}
	f.mu.Lock()
	f.verified[hexDigest] = true
	f.mu.Unlock()
	return nil
}

// maxExpandedArchive bounds a chart archive once decompressed, as a tar stream. Helm's loader bounds the
// files' contents (loader.MaxDecompressedChartSize, 100 MiB) but neither their names, which a tar entry
// may run to a MiB, nor their number: a 213 KiB archive of empty files with long names expanded to 200
// MiB of names, so an archive of DefaultMaxArchiveBytes would expand to tens of GiB. The stream holds the
// contents, the names and a 512-byte header per file, so bounding it bounds all three.
const maxExpandedArchive = 128 << 20

// expand checks that data is a chart archive (Helm's own checks on paths and sizes, and
// maxExpandedArchive) and returns its files.
func expand(data []byte) ([]*loader.BufferedFile, error) {
	return expandWithin(data, maxExpandedArchive)
}

func expandWithin(data []byte, limit int64) ([]*loader.BufferedFile, error) {
	// Decompressed once, keeping nothing, so that nothing of an archive past the bound is ever held. A
	// stream that fails short of the bound is left to Helm's loader, which stops at the same place and
	// says why.
	if zr, err := gzip.NewReader(bytes.NewReader(data)); err == nil {
		if n, _ := io.Copy(io.Discard, io.LimitReader(zr, limit+1)); n > limit {
			return nil, fmt.Errorf("the archive is larger than %s once decompressed, the most Flotilla expands", mib(limit))
		}
	}
	files, err := loader.LoadArchiveFiles(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("not a chart archive: %v", err)
	}
	hasChart := false
	for _, f := range files {
		if f.Name == "Chart.yaml" {
			hasChart = true
			break
		}
	}
	if !hasChart {
		return nil, errors.New("not a chart archive: no Chart.yaml at its top")
	}
	return files, nil
}

// filesLRU keeps the expanded files of the archives used last, up to a number of bytes. The files are
// shared by every chart parsed from them: nothing in Helm writes into a file's bytes.
type filesLRU struct {
	lru *sizedLRU[[]*loader.BufferedFile]
}

func newFilesLRU(max int64) *filesLRU {
	return &filesLRU{lru: newSizedLRU[[]*loader.BufferedFile](max)}
}

func (l *filesLRU) get(digest string) ([]*loader.BufferedFile, bool) { return l.lru.get(digest) }

func (l *filesLRU) put(digest string, files []*loader.BufferedFile) {
	if _, ok := l.lru.get(digest); ok {
		return
	}
	var size int64
	for _, f := range files {
		size += int64(len(f.Data) + len(f.Name))
	}
	l.lru.put(digest, files, size)
}
