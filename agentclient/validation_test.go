package agentclient

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/client-go/discovery"
)

// The server version decides whether Helm's client-side validation can be skipped; vendors append "+".
func TestParseVersionReadsMajorAndMinorOfEveryVendor(t *testing.T) {
	for v, want := range map[[2]string][2]int{
		{"1", "34"}:  {1, 34},
		{"1", "26+"}: {1, 26},
	} {
		major, minor, ok := parseVersion(v[0], v[1])
		require.True(t, ok, v)
		require.Equal(t, want, [2]int{major, minor}, v)
	}
	_, _, ok := parseVersion("", "")
	require.False(t, ok, "no major/minor: keep Helm's validation")
}

// countingDiscovery counts how often the shared cache is really dropped.
type countingDiscovery struct {
	discovery.CachedDiscoveryInterface
	drops *int
}

func (c countingDiscovery) Invalidate() { *c.drops++ }

// Concurrent Helm operations on one cluster share one discovery refresh: an operation skips its drop
// when another one dropped the cache after it began, never when the last drop is older than its start.
func TestHelmOperationsShareADiscoveryRefreshOnlyWhenItIsNewer(t *testing.T) {
	drops := 0
	shared := countingDiscovery{drops: &drops}
	c := &Client{mapper: newClusterMapper(shared, newMapperTable())}
	first := time.Now()
	second := first.Add(time.Millisecond)
	time.Sleep(2 * time.Millisecond)
	operationDiscovery{CachedDiscoveryInterface: shared, c: c, start: first}.Invalidate()
	operationDiscovery{CachedDiscoveryInterface: shared, c: c, start: second}.Invalidate()
	require.Equal(t, 1, drops, "the second operation began before the first drop: that drop is fresh enough for it")

	time.Sleep(2 * time.Millisecond)
	operationDiscovery{CachedDiscoveryInterface: shared, c: c, start: time.Now()}.Invalidate()
	require.Equal(t, 2, drops, "an operation that began after the last drop drops again")
}
