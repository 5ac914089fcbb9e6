package content

import (
	"bytes"
	"crypto/rand"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPutGetHas(t *testing.T) {
	s := &Store{Dir: t.TempDir()}
	data := []byte("a package")
	require.False(t, s.Has(Digest(data)))

	digest, err := s.Put(data)
	require.NoError(t, err)
	require.Equal(t, Digest(data), digest)
	require.True(t, strings.HasPrefix(digest, "sha256:"))
	require.True(t, s.Has(digest))
	got, err := s.Get(digest)
	require.NoError(t, err)
	require.Equal(t, data, got)
	size, err := s.Size(digest)
	require.NoError(t, err)
	require.EqualValues(t, len(data), size)

	again, err := s.Put(data)
	require.NoError(t, err, "storing the same content again is no error")
	require.Equal(t, digest, again)

	_, err = s.Get(Digest([]byte("never stored")))
	require.ErrorIs(t, err, ErrNotFound)
}

// Another process sharing the directory finds what this one stored; many goroutines storing the same
// content at once all get its digest, and nothing half written is ever read.
func TestTheStoreIsSharedSafely(t *testing.T) {
	dir := t.TempDir()
	data := bytes.Repeat([]byte("0123456789"), 100_000)
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			// A store of its own, as another process has.
			s := &Store{Dir: dir}
			digest, err := s.Put(data)
			assert.NoError(t, err)
			got, err := s.Get(digest)
			assert.NoError(t, err)
			assert.True(t, bytes.Equal(data, got))
		})
	}
	shared := &Store{Dir: dir}
	for range 16 {
		wg.Go(func() {
			_, err := shared.Put(data)
			assert.NoError(t, err)
			_, err = shared.ReadChunk(Digest(data), 0, 10)
			assert.NoError(t, err)
		})
	}
	wg.Wait()
	entries, err := os.ReadDir(filepath.Join(dir, "sha256"))
	require.NoError(t, err)
	require.Len(t, entries, 1, "no temporary file is left behind")
}

// Chunks read one after the other give back the content exactly, the last one shorter.
func TestChunksCoverTheContentExactly(t *testing.T) {
	s := &Store{Dir: t.TempDir()}
	for _, size := range []int{0, 1, 99, 100, 101, 1000, 1050} {
		data := make([]byte, size)
		_, _ = rand.Read(data)
		digest, err := s.Put(data)
		require.NoError(t, err)
		var joined []byte
		for offset := int64(0); offset < int64(size); offset += 100 {
			chunk, err := s.ReadChunk(digest, offset, 100)
			require.NoError(t, err)
			require.EqualValues(t, min(100, int64(size)-offset), len(chunk))
			joined = append(joined, chunk...)
		}
		require.True(t, bytes.Equal(data, joined), "size %d", size)
		_, err = s.ReadChunk(digest, int64(size)+1, 100)
		require.Error(t, err, "a chunk past the end")
	}
}

// A file that no longer matches its digest is never served: it is removed, and is not found.
func TestACorruptFileIsRemovedAndNotFound(t *testing.T) {
	dir := t.TempDir()
	digest, err := (&Store{Dir: dir}).Put([]byte("the right bytes"))
	require.NoError(t, err)
	h, err := ParseDigest(digest)
	require.NoError(t, err)
	file := filepath.Join(dir, "sha256", h)
	require.NoError(t, os.WriteFile(file, []byte("the wrong bytes"), 0o644))

	s := &Store{Dir: dir}
	_, err = s.Get(digest)
	require.ErrorIs(t, err, ErrNotFound)
	require.ErrorContains(t, err, "corrupt")
	require.NoFileExists(t, file)
	require.False(t, s.Has(digest))

	_, err = s.Put([]byte("the right bytes"))
	require.NoError(t, err)
	require.True(t, s.Has(digest), "storing it again mends it")
}

// A digest names a file: anything but sha256 and 64 lowercase hex digits is refused before it is used.
func TestABadDigestIsRefused(t *testing.T) {
	s := &Store{Dir: t.TempDir()}
	good := Digest([]byte("x"))
	for _, bad := range []string{
		"", "sha256:", "sha512:" + strings.Repeat("a", 64), "sha256:" + strings.Repeat("a", 63),
		"sha256:" + strings.Repeat("a", 65), "sha256:" + strings.ToUpper(good[7:]), "sha256:../../" + strings.Repeat("a", 58),
		"sha256:" + strings.Repeat("g", 64), good[7:],
	} {
		_, err := s.Get(bad)
		require.ErrorContains(t, err, "not sha256:<64 lowercase hex digits>", "%q", bad)
		_, err = s.ReadChunk(bad, 0, 1)
		require.Error(t, err, "%q", bad)
		require.False(t, s.Has(bad))
	}
}
