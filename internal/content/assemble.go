package content

import (
	"context"
	"fmt"
	"sync"

	"github.com/flotilla-gitops/flotilla/internal/bytesize"
	"github.com/flotilla-gitops/flotilla/internal/parallel"
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
	if _, err := ParseDigest(digest); err != nil {
		return nil, err
	}
	switch {
	case size < 0:
		return nil, fmt.Errorf("content %s: size %d", digest, size)
	case size > MaxSize:
		return nil, fmt.Errorf("content %s: %d bytes is over the %s limit", digest, size, bytesize.Format(MaxSize))
	case chunkSize <= 0:
		return nil, fmt.Errorf("content %s: chunk size %d", digest, chunkSize)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// The first chunk that failed, not the cancellations it caused in the others.
	var mu sync.Mutex
	var cause error
	data := make([]byte, size)
	chunks := int((size + chunkSize - 1) / chunkSize)
	err := parallel.ForEach(chunks, fetchers, func(i int) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		offset := int64(i) * chunkSize
		length := min(chunkSize, size-offset)
		chunk, err := fetch(ctx, offset, length)
		if err == nil && int64(len(chunk)) != length {
			err = fmt.Errorf("%d bytes where %d were asked", len(chunk), length)
		}
		if err != nil {
			err = fmt.Errorf("content %s: chunk at %d: %w", digest, offset, err)
			mu.Lock()
			if cause == nil {
				cause = err
			}
			mu.Unlock()
			// The other chunks would only be thrown away.
			cancel()
			return err
		}
		copy(data[offset:], chunk)
		return nil
	})
	if cause != nil {
		return nil, cause
	}
	if err != nil {
		return nil, fmt.Errorf("content %s: %w", digest, err)
	}
	if got := Digest(data); got != digest {
		return nil, fmt.Errorf("content %s: the %d bytes fetched are %s", digest, size, got)
	}
	return data, nil
}
