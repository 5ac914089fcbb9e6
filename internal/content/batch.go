package content

import (
	"context"
	"fmt"
	"sync"

	"github.com/flotilla-gitops/flotilla/internal/bytesize"
	"github.com/flotilla-gitops/flotilla/internal/parallel"
)

// MaxSize is the largest content FetchAll fetches: a package far larger than any real release is a
// mistake or an attack, not something to hold in an agent's memory.
const MaxSize = 256 << 20

// fetchers is how many batches FetchAll fetches at once: each is a round trip through Temporal, so a few
// at a time hide its latency without flooding the management side's workers.
const fetchers = 4

// Want is one content to fetch, known by its digest and size.
type Want struct {
	Digest string
	Size   int64
}

// Piece is a byte range of one of the wanted contents (Index into the wants).
type Piece struct {
	Index          int
	Offset, Length int64
}

// Batches cuts the wants into pieces of at most limit bytes and groups consecutive pieces into batches of
// at most limit bytes in all: fifty small packages travel in one batch, a large one in several. An empty
// content needs no piece.
func Batches(wants []Want, limit int64) [][]Piece {
	var out [][]Piece
	var batch []Piece
	var used int64
	for i, w := range wants {
		for off := int64(0); off < w.Size; {
			if used == limit {
				out, batch, used = append(out, batch), nil, 0
			}
			n := min(w.Size-off, limit-used)
			batch = append(batch, Piece{Index: i, Offset: off, Length: n})
			off, used = off+n, used+n
		}
	}
	if len(batch) > 0 {
		out = append(out, batch)
	}
	return out
}

// FetchAll fetches every wanted content in batches of at most limit bytes (a few batches at once) and
// returns them in order once each matches its digest. fetch returns the concatenation of a batch's pieces,
// in order; it may be called by a few goroutines at once.
func FetchAll(ctx context.Context, wants []Want, limit int64, fetch func(ctx context.Context, batch []Piece) ([]byte, error)) ([][]byte, error) {
	if limit <= 0 {
		return nil, fmt.Errorf("batch limit %d", limit)
	}
	out := make([][]byte, len(wants))
	for i, w := range wants {
		if _, err := ParseDigest(w.Digest); err != nil {
			return nil, err
		}
		switch {
		case w.Size < 0:
			return nil, fmt.Errorf("content %s: size %d", w.Digest, w.Size)
		case w.Size > MaxSize:
			return nil, fmt.Errorf("content %s: %d bytes is over the %s limit", w.Digest, w.Size, bytesize.Format(MaxSize))
		}
		out[i] = make([]byte, w.Size)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// The first batch that failed, not the cancellations it caused in the others.
	var mu sync.Mutex
	var cause error
	batches := Batches(wants, limit)
	err := parallel.ForEach(len(batches), fetchers, func(i int) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		b := batches[i]
		var want int64
		for _, p := range b {
			want += p.Length
		}
		data, err := fetch(ctx, b)
		if err == nil && int64(len(data)) != want {
			err = fmt.Errorf("%d bytes where %d were asked", len(data), want)
		}
		if err != nil {
			first := b[0]
			err = fmt.Errorf("content %s: chunk at %d: %w", wants[first.Index].Digest, first.Offset, err)
			mu.Lock()
			if cause == nil {
				cause = err
			}
			mu.Unlock()
			// The other batches would only be thrown away.
			cancel()
			return err
		}
		for _, p := range b {
			copy(out[p.Index][p.Offset:], data[:p.Length])
			data = data[p.Length:]
		}
		return nil
	})
	if cause != nil {
		return nil, cause
	}
	if err != nil {
		return nil, err
	}
	for i, w := range wants {
		if got := Digest(out[i]); got != w.Digest {
			return nil, fmt.Errorf("content %s: the %d bytes fetched are %s", w.Digest, w.Size, got)
		}
	}
	return out, nil
}
