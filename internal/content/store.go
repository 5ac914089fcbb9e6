package content

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"

	"github.com/flotilla-gitops/flotilla/internal/cachedir"
)

// ErrNotFound is a digest the store does not hold, or held corrupt and removed.
var ErrNotFound = errors.New("content not found")

// Store keeps contents in Dir/sha256/<hex>. Files are written to a temporary name and renamed into
// place, so a reader, in this process or another sharing Dir, sees a whole file or none; two writers of
// one digest write the same bytes, so whichever rename wins is right.
type Store struct {
	Dir string

	mu sync.Mutex
	// verified are the sizes of the files this process has read whole and found to match their digest:
	// ReadChunk then serves ranges without hashing the whole file for each. FetchAll checks the whole
	// digest at the other end anyway.
	verified map[string]int64
}

func (s *Store) path(h string) string { return filepath.Join(s.Dir, "sha256", h) }

// Put stores data and returns its digest. Storing what is already there changes nothing.
func (s *Store) Put(data []byte) (string, error) {
	digest := Digest(data)
	h, _ := ParseDigest(digest)
	if _, err := s.verify(digest, h); err == nil {
		return digest, nil
	}
	dir := filepath.Dir(s.path(h))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("content store %s: %w", s.Dir, err)
	}
	tmp, err := os.CreateTemp(dir, cachedir.PutTemp+"*")
	if err != nil {
		return "", fmt.Errorf("content store %s: %w", s.Dir, err)
	}
	fail := func(err error) (string, error) {
		_ = tmp.Close()
		_ = os.Remove(tmp.Name())
		return "", fmt.Errorf("content store %s: storing %s: %w", s.Dir, digest, err)
	}
	if _, err := tmp.Write(data); err != nil {
		return fail(err)
	}
	// Synced before the rename: after a crash the name must never hold a partial file.
	if err := tmp.Sync(); err != nil {
		return fail(err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		return fail(err)
	}
	if err := tmp.Close(); err != nil {
		return fail(err)
	}
	if err := os.Rename(tmp.Name(), s.path(h)); err != nil {
		_ = os.Remove(tmp.Name())
		return "", fmt.Errorf("content store %s: storing %s: %w", s.Dir, digest, err)
	}
	s.remember(h, int64(len(data)))
	return digest, nil
}

// Get returns the content of digest, checked against it.
func (s *Store) Get(digest string) ([]byte, error) {
	h, err := ParseDigest(digest)
	if err != nil {
		return nil, err
	}
	data, err := s.readWhole(digest, h)
	if err != nil {
		return nil, err
	}
	s.remember(h, int64(len(data)))
	return data, nil
}

// Has reports whether the store holds digest, intact.
func (s *Store) Has(digest string) bool {
	_, err := s.Size(digest)
	return err == nil
}

// Size is the length of the content of digest.
func (s *Store) Size(digest string) (int64, error) {
	h, err := ParseDigest(digest)
	if err != nil {
		return 0, err
	}
	return s.verify(digest, h)
}

// ReadChunk returns length bytes of the content of digest from offset, fewer at its end.
func (s *Store) ReadChunk(digest string, offset, length int64) ([]byte, error) {
	h, err := ParseDigest(digest)
	if err != nil {
		return nil, err
	}
	size, err := s.verify(digest, h)
	if err != nil {
		return nil, err
	}
	if offset < 0 || length < 0 || offset > size {
		return nil, fmt.Errorf("content %s: chunk at %d of %d bytes is outside its %d bytes", digest, offset, length, size)
	}
	n := min(length, size-offset)
	f, err := os.Open(s.path(h))
	if errors.Is(err, os.ErrNotExist) {
		s.forget(h)
		return nil, fmt.Errorf("%w: %s", ErrNotFound, digest)
	}
	if err != nil {
		return nil, fmt.Errorf("content %s: %w", digest, err)
	}
	defer f.Close()
	buf := make([]byte, n)
	if _, err := f.ReadAt(buf, offset); err != nil && !(errors.Is(err, io.EOF) && n == 0) {
		return nil, fmt.Errorf("content %s: reading %d bytes at %d: %w", digest, n, offset, err)
	}
	return buf, nil
}

// verify returns the size of digest's file once it has been read whole and matched its digest.
func (s *Store) verify(digest, h string) (int64, error) {
	s.mu.Lock()
	size, ok := s.verified[h]
	s.mu.Unlock()
	if ok {
		if _, err := os.Stat(s.path(h)); err == nil {
			return size, nil
		}
		s.forget(h)
	}
	data, err := s.readWhole(digest, h)
	if err != nil {
		return 0, err
	}
	s.remember(h, int64(len(data)))
	return int64(len(data)), nil
}

// readWhole reads digest's file and checks it; a file that does not match is removed, so that the next
// Put stores it again.
func (s *Store) readWhole(digest, h string) ([]byte, error) {
	data, err := os.ReadFile(s.path(h))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s", ErrNotFound, digest)
	}
	if err != nil {
		return nil, fmt.Errorf("content %s: %w", digest, err)
	}
	if got := Digest(data); got != digest {
		s.forget(h)
		if err := os.Remove(s.path(h)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("content %s: corrupt (its bytes are %s) and not removed: %w", digest, got, err)
		}
		return nil, fmt.Errorf("%w: %s was corrupt (its bytes are %s) and is removed", ErrNotFound, digest, got)
	}
	return data, nil
}

func (s *Store) remember(h string, size int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.verified == nil {
		s.verified = map[string]int64{}
	}
	s.verified[h] = size
}

func (s *Store) forget(h string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.verified, h)
}
