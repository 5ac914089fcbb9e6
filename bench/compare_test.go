package bench

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestASpreadIsTheMedianAndRangeOfItsRuns(t *testing.T) {
	require.Equal(t, Spread{Median: 4.53, Min: 4.51, Max: 4.60, N: 3}, spreadOf([]float64{4.60, 4.51, 4.53}))
	require.Equal(t, Spread{Median: 2.5, Min: 1, Max: 4, N: 4}, spreadOf([]float64{4, 1, 2, 3}))
	require.Equal(t, Spread{}, spreadOf(nil))
}

// A difference is reported only when the runs' own spread cannot explain it.
func TestAVerdictWeighsTheDifferenceAgainstTheSpread(t *testing.T) {
	old := spreadOf([]float64{4.51, 4.53, 4.60})
	require.Equal(t, "slower", verdict(old, spreadOf([]float64{8.55, 8.57, 8.60})), "fleet-shape-50x3 at 1110fa5")
	require.Equal(t, "faster", verdict(spreadOf([]float64{8.55, 8.57, 8.60}), old))
	require.Equal(t, "within spread", verdict(old, spreadOf([]float64{4.55, 4.58, 4.66})), "overlapping ranges")
	require.Equal(t, "within spread", verdict(spreadOf([]float64{4.70, 4.76, 4.76}), spreadOf([]float64{4.77, 4.78, 4.83})),
		"apart, but by less than either range is wide")
	require.Equal(t, "not measured", verdict(old, Spread{}))
}
