package content

import (
	"context"
	"fmt"
)

// MaxSize is the largest content Assemble fetches: a package far larger than any real release is a
// mistake or an attack, not something to hold in an agent's memory.
const MaxSize = 256 << 20

// fetchers is how many chunks Assemble fetches at once: each is a round trip through Temporal, so a few
// at a time hide its latency without flooding the management side's workers.
const fetchers = 4

// Assemble fetches the size bytes of digest in chunks of chunkSize (the last one shorter) and returns
// them once their digest matches. fetch returns length bytes of the content from offset; it may be called
// by a few goroutines at once.
func Assemble(ctx context.Context, digest string, size int64, chunkSize int64, fetch func(ctx context.Context, offset, length int64) ([]byte, error)) ([]byte, error) {
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
