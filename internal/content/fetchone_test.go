package content

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

// fromStore fetches chunks the way an agent does, from the management side's store, and counts them.
func fromStore(s *Store, digest string, calls *atomic.Int32) func(ctx context.Context, offset, length int64) ([]byte, error) {
	return func(ctx context.Context, offset, length int64) ([]byte, error) {
		calls.Add(1)
		return s.ReadChunk(digest, offset, length)
	}
}

// A 3 MiB package that does not compress, fetched in 512 KiB chunks as an agent fetches it: six chunks,
// and the same bytes.
func TestFetchingOneContentFetchesA3MiBContentIn512KiBChunks(t *testing.T) {
	data := make([]byte, 3<<20)
	_, _ = rand.Read(data)
	s := &Store{Dir: t.TempDir()}
	digest, err := s.Put(data)
	require.NoError(t, err)

	var calls atomic.Int32
	got, err := fetchOne(context.Background(), digest, int64(len(data)), 512<<10, fromStore(s, digest, &calls))
	require.NoError(t, err)
	require.True(t, bytes.Equal(data, got))
	require.EqualValues(t, 6, calls.Load())
}

func TestFetchingOneContentAnEmptyContentFetchesNothing(t *testing.T) {
	var calls atomic.Int32
	got, err := fetchOne(context.Background(), Digest(nil), 0, 512<<10, fromStore(&Store{Dir: t.TempDir()}, "", &calls))
	require.NoError(t, err)
	require.Empty(t, got)
	require.Zero(t, calls.Load())
}

// A chunk of the wrong bytes makes the whole content fail its digest; a chunk of the wrong length is
// caught at once.
func TestFetchingOneContentRefusesWrongChunks(t *testing.T) {
	data := bytes.Repeat([]byte("abcdefgh"), 1000)
	digest := Digest(data)
	wrongByte := func(ctx context.Context, offset, length int64) ([]byte, error) {
		chunk := bytes.Clone(data[offset : offset+length])
		if offset == 1000 {
			chunk[0] ^= 1
		}
		return chunk, nil
	}
	_, err := fetchOne(context.Background(), digest, int64(len(data)), 1000, wrongByte)
	require.ErrorContains(t, err, "the 8000 bytes fetched are sha256:")

	short := func(ctx context.Context, offset, length int64) ([]byte, error) {
		return data[offset : offset+length-1], nil
	}
	_, err = fetchOne(context.Background(), digest, int64(len(data)), 1000, short)
	require.ErrorContains(t, err, "999 bytes where 1000 were asked")

	failing := errors.New("workflow timed out")
	broken := func(ctx context.Context, offset, length int64) ([]byte, error) {
		if offset == 3000 {
			return nil, failing
		}
		return data[offset : offset+length], nil
	}
	_, err = fetchOne(context.Background(), digest, int64(len(data)), 1000, broken)
	require.ErrorIs(t, err, failing, "the chunk that failed is reported, not what cancelling the others did")
}

func TestFetchingOneContentRefusesAContentOverTheLimit(t *testing.T) {
	never := func(ctx context.Context, offset, length int64) ([]byte, error) {
		t.Fatal("nothing is fetched")
		return nil, nil
	}
	_, err := fetchOne(context.Background(), Digest(nil), MaxSize+1, 512<<10, never)
	require.ErrorContains(t, err, "over the 256 MiB limit")
	_, err = fetchOne(context.Background(), "sha256:../etc", 10, 512<<10, never)
	require.ErrorContains(t, err, "not sha256:")
}

// fetchOne is FetchAll for one content, fetched by offset and length: how an agent fetches a package too
// large for one batch. It fetches the size bytes of digest in chunks of chunkSize (the last one shorter) and returns
// them once their digest matches. fetch returns length bytes of the content from offset; it may be called
// by a few goroutines at once.
func fetchOne(ctx context.Context, digest string, size int64, chunkSize int64, fetch func(ctx context.Context, offset, length int64) ([]byte, error)) ([]byte, error) {
	if chunkSize <= 0 {
		return nil, fmt.Errorf("content %s: chunk size %d", digest, chunkSize)
	}
	// One content in batches of chunkSize is one piece per batch.
	all, err := FetchAll(ctx, []Want{{Digest: digest, Size: size}}, chunkSize, func(ctx context.Context, batch []Piece) ([]byte, error) {
		return fetch(ctx, batch[0].Offset, batch[0].Length)
	})
	if err != nil {
		return nil, err
	}
	return all[0], nil
}
