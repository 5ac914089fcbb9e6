package content

import (
	"bytes"
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSmallContentsShareABatchAndALargeOneIsCutIntoSeveral(t *testing.T) {
	wants := []Want{{Size: 10}, {Size: 0}, {Size: 30}, {Size: 250}, {Size: 5}}
	require.Equal(t, [][]Piece{
		{{0, 0, 10}, {2, 0, 30}, {3, 0, 60}},
		{{3, 60, 100}},
		{{3, 160, 90}, {4, 0, 5}},
	}, Batches(wants, 100))
	require.Empty(t, Batches([]Want{{Size: 0}}, 100), "an empty content needs no fetch")
}

// Fifty packages of an apply come in one round trip, each checked against its digest.
func TestFetchAllGetsManyContentsInFewRoundTrips(t *testing.T) {
	var contents [][]byte
	var wants []Want
	for i := 0; i < 50; i++ {
		c := bytes.Repeat([]byte(fmt.Sprintf("package %d;", i)), 100+i)
		contents = append(contents, c)
		wants = append(wants, Want{Digest: Digest(c), Size: int64(len(c))})
	}
	big := bytes.Repeat([]byte("x"), 3000)
	contents, wants = append(contents, big), append(wants, Want{Digest: Digest(big), Size: 3000})
	var trips atomic.Int32
	serve := func(_ context.Context, batch []Piece) ([]byte, error) {
		trips.Add(1)
		var out []byte
		for _, p := range batch {
			out = append(out, contents[p.Index][p.Offset:p.Offset+p.Length]...)
		}
		return out, nil
	}
	got, err := FetchAll(context.Background(), wants, 1<<20, serve)
	require.NoError(t, err)
	require.Equal(t, contents, got)
	require.EqualValues(t, 1, trips.Load(), "everything fits one batch")

	trips.Store(0)
	_, err = FetchAll(context.Background(), wants, 1000, serve)
	require.NoError(t, err)
	require.Greater(t, trips.Load(), int32(3), "in batches of at most 1000 bytes")

	wants[7].Digest = Digest([]byte("something else"))
	_, err = FetchAll(context.Background(), wants, 1<<20, serve)
	require.ErrorContains(t, err, "content "+wants[7].Digest+": the")
}
