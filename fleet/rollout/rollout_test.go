package rollout

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/flotilla-gitops/flotilla/fleet"
)

func pct(s string) *intstr.IntOrString { v := intstr.FromString(s); return &v }
func num(i int) *intstr.IntOrString    { v := intstr.FromInt(i); return &v }

// Fleet's limit, value by value (rancher/fleet target/status.go).
func TestLimitCountsAsFleetDoes(t *testing.T) {
	for _, c := range []struct {
		count int
		val   *intstr.IntOrString
		want  int
	}{
		{10, nil, 10},         // 100% by default
		{10, pct("10%"), 1},   // 1.0
		{9, pct("10%"), 1},    // 0.9 rounds down, but never below 1
		{25, pct("10%"), 2},   // 2.5 rounds down
		{10, pct("0%"), 1},    // 0% is 1
		{10, num(0), 0},       // a number is taken as it is
		{10, num(3), 3},       //
		{2, num(5), 2},        // capped to the count
		{0, num(0), 1},        // of nothing, 1
		{10, pct("250%"), 10}, // capped to the count
		{10, pct("3"), 3},     // a number in a string
	} {
		got, err := Limit(c.count, c.val)
		require.NoError(t, err)
		assert.Equal(t, c.want, got, "limit(%d, %v)", c.count, c.val)
	}
	_, err := Limit(10, pct("ten"))
	assert.ErrorContains(t, err, `"ten" is neither a number nor a percentage`)
}

func TestTheFirstValueGivenDecides(t *testing.T) {
	got, _ := Limit(10, nil, pct("50%"), num(1))
	assert.Equal(t, 5, got)
}

func clusters(n int, label func(i int) map[string]string) []fleet.ClusterInfo {
	out := make([]fleet.ClusterInfo, n)
	for i := range out {
		out[i] = fleet.ClusterInfo{Name: fmt.Sprintf("c%03d", i), Labels: label(i)}
	}
	return out
}

func names(p Plan) []string {
	var out []string
	for _, part := range p.Partitions {
		out = append(out, fmt.Sprintf("%s:%d/%d", part.Name, len(part.Members), part.MaxUnavailable))
	}
	return out
}

func TestWithoutAStrategyFleetsDefaultsHold(t *testing.T) {
	p, err := Partitions(nil, clusters(10, func(int) map[string]string { return nil }))
	require.NoError(t, err)
	assert.Equal(t, []string{"All:10/10"}, names(p))
	assert.Equal(t, Plan{MaxUnavailable: 10, MaxUnavailablePartitions: 0, MaxNew: 50, Partitions: p.Partitions}, p)
}

func TestAutomaticPartitionsFromTheThresholdOn(t *testing.T) {
	none := func(int) map[string]string { return nil }
	below, _ := Partitions(nil, clusters(199, none))
	assert.Equal(t, []string{"All:199/199"}, names(below))
	at, _ := Partitions(&fleet.RolloutStrategy{MaxUnavailable: pct("10%")}, clusters(200, none))
	assert.Equal(t, []string{"Partition 0 - 50:50/5", "Partition 50 - 100:50/5", "Partition 100 - 150:50/5", "Partition 150 - 200:50/5"}, names(at))
	threshold, size := 4, intstr.FromInt(3)
	small, _ := Partitions(&fleet.RolloutStrategy{AutoPartitionThreshold: &threshold, AutoPartitionSize: &size}, clusters(7, none))
	assert.Equal(t, []string{"Partition 0 - 3:3/3", "Partition 3 - 6:3/3", "Partition 6 - 7:1/1"}, names(small))
	zero := intstr.FromInt(0)
	off, _ := Partitions(&fleet.RolloutStrategy{AutoPartitionThreshold: &threshold, AutoPartitionSize: &zero}, clusters(7, none))
	assert.Equal(t, []string{"All:7/7"}, names(off))
}

// Declared partitions take their clusters in order, each cluster once; the clusters none matches follow;
// a partition's maxUnavailable falls back to the strategy's, then to 100%.
func TestDeclaredPartitionsTakeTheirClustersInOrder(t *testing.T) {
	stage := func(i int) map[string]string {
		return map[string]string{"stage": []string{"canary", "early", "late", "other"}[i%4]}
	}
	sel := func(v string) *metav1.LabelSelector {
		return &metav1.LabelSelector{MatchLabels: map[string]string{"stage": v}}
	}
	s := &fleet.RolloutStrategy{MaxUnavailable: num(2), MaxUnavailablePartitions: num(1), Partitions: []fleet.Partition{
		{Name: "canary", MaxUnavailable: num(0), ClusterSelector: sel("canary")},
		{Name: "first", ClusterName: "c000"}, // already the canary's
		{Name: "early", ClusterSelector: sel("early")},
		{Name: "late", MaxUnavailable: pct("50%"), ClusterSelector: sel("late")},
	}}
	p, err := Partitions(s, clusters(12, stage))
	require.NoError(t, err)
	assert.Equal(t, []string{"canary:3/0", "first:0/1", "early:3/2", "late:3/1", "unmatched:3/2"}, names(p))
	assert.Equal(t, []int{0, 4, 8}, p.Partitions[0].Members)
	assert.Equal(t, 1, p.MaxUnavailablePartitions)
	assert.Equal(t, 2, p.MaxUnavailable)
}

func TestAStrategyThatCannotBeUsedIsNamed(t *testing.T) {
	for want, s := range map[string]*fleet.RolloutStrategy{
		`rolloutStrategy.maxUnavailable: "lots" is neither`:                      {MaxUnavailable: pct("lots")},
		`rolloutStrategy.partitions[1].maxUnavailable: "x%" is not a percentage`: {Partitions: []fleet.Partition{{}, {MaxUnavailable: pct("x%")}}},
		`rolloutStrategy.partitions[0].clusterSelector: `: {Partitions: []fleet.Partition{{ClusterSelector: &metav1.LabelSelector{
			MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "a", Operator: "Sometimes"}}}}}},
	} {
		assert.ErrorContains(t, Validate(s), want)
	}
}
