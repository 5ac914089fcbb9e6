// Package rollout turns a bundle's rolloutStrategy into partitions of a GitRepo's clusters and budgets,
// with Fleet's rules and defaults (rancher/fleet internal/cmd/controller/target: partition.go, status.go).
// It is pure: what to deliver when is decided by the GitRepo workflow (workflows/rollout_partitions.go).
package rollout

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/flotilla-gitops/flotilla/fleet"
	"github.com/flotilla-gitops/flotilla/fleet/target"
)

// Fleet's defaults.
const (
	DefaultMaxNew                 = 50
	DefaultAutoPartitionThreshold = 200
	// UnmatchedPartition names the partition of the clusters no declared partition matches.
	UnmatchedPartition = "unmatched"
)

var (
	defaultLimit                    = intstr.FromString("100%")
	defaultAutoPartitionSize        = intstr.FromString("25%")
	defaultMaxUnavailablePartitions = intstr.FromInt32(0)
)

// Plan is a strategy applied to a GitRepo's clusters: budgets as counts, and partitions in rollout order.
type Plan struct {
	MaxUnavailable           int
	MaxUnavailablePartitions int
	MaxNew                   int
	Partitions               []Partition
}

// Partition is a named set of clusters rolled out together.
type Partition struct {
	Name           string
	MaxUnavailable int
	// Approval and Soak are the partition's gate.
	Approval bool
	Soak     time.Duration
	// Members are indexes into the clusters the plan was made for.
	Members []int
}

// Limit is Fleet's limit: the first value given, else 100%, as a count of count items. An integer is
// capped to [0, count]; a percentage is rounded down, and never below 1 (0% is 1). Of no items, it is 1.
func Limit(count int, vals ...*intstr.IntOrString) (int, error) {
	if count <= 0 {
		return 1, nil
	}
	v := &defaultLimit
	for _, val := range vals {
		if val != nil {
			v = val
			break
		}
	}
	if v.Type == intstr.Int {
		return min(max(v.IntValue(), 0), count), nil
	}
	if i, err := strconv.Atoi(v.StrVal); err == nil {
		// "3" is a number, as intstr reads it.
		return min(max(i, 0), count), nil
	}
	pct, ok := strings.CutSuffix(v.StrVal, "%")
	if !ok {
		return 0, fmt.Errorf("%q is neither a number nor a percentage (10%%)", v.StrVal)
	}
	p, err := strconv.ParseFloat(pct, 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not a percentage: %w", v.StrVal, err)
	}
	if p <= 0 {
		return 1, nil
	}
	return min(max(int(float64(count)*p)/100, 1), count), nil
}

// Validate reports the first value of a strategy that cannot be used, naming its key under rolloutStrategy.
func Validate(s *fleet.RolloutStrategy) error {
	if s == nil {
		return nil
	}
	check := func(key string, v *intstr.IntOrString) error {
		if v == nil {
			return nil
		}
		if _, err := Limit(100, v); err != nil {
			return fmt.Errorf("rolloutStrategy.%s: %w", key, err)
		}
		return nil
	}
	if err := errors.Join(check("maxUnavailable", s.MaxUnavailable), check("maxUnavailablePartitions", s.MaxUnavailablePartitions),
		check("autoPartitionSize", s.AutoPartitionSize)); err != nil {
		return err
	}
	for i, p := range s.Partitions {
		key := fmt.Sprintf("partitions[%d]", i)
		if err := check(key+".maxUnavailable", p.MaxUnavailable); err != nil {
			return err
		}
		if p.Gate != nil {
			if _, err := soakOf(p.Gate); err != nil {
				return fmt.Errorf("rolloutStrategy.%s.gate.soak: %w", key, err)
			}
		}
		for field, sel := range map[string]*metav1.LabelSelector{"clusterSelector": p.ClusterSelector, "clusterGroupSelector": p.ClusterGroupSelector} {
			if sel == nil {
				continue
			}
			if _, err := metav1.LabelSelectorAsSelector(sel); err != nil {
				return fmt.Errorf("rolloutStrategy.%s.%s: %w", key, field, err)
			}
		}
	}
	return nil
}

// soakOf reads a gate's soak time: a positive duration, or nothing.
func soakOf(g *fleet.PartitionGate) (time.Duration, error) {
	if g.Soak == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(g.Soak)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("%q is not a positive duration (10m, 1h30m)", g.Soak)
	}
	return d, nil
}

// Partitions applies a strategy (nil: Fleet's defaults) to clusters, in the order given. Declared
// partitions come first, in their order; a cluster belongs to the first that matches it. Clusters none
// matches follow in partitions made as automatic ones are, as Fleet documents it (Fleet's code leaves them
// out, so they would never get the GitRepo). Without declared partitions, clusters are split in
// autoPartitionSize pieces once there are autoPartitionThreshold of them, else kept in one, "All".
func Partitions(s *fleet.RolloutStrategy, clusters []fleet.ClusterInfo) (Plan, error) {
	if s == nil {
		s = &fleet.RolloutStrategy{}
	}
	if err := Validate(s); err != nil {
		return Plan{}, err
	}
	p := Plan{MaxNew: DefaultMaxNew}
	if s.MaxNew != nil {
		p.MaxNew = *s.MaxNew
	}
	p.MaxUnavailable, _ = Limit(len(clusters), s.MaxUnavailable)
	taken := make([]bool, len(clusters))
	for n, def := range s.Partitions {
		if def.Name == "" {
			def.Name = fmt.Sprintf("partition %d", n+1) // Fleet leaves it empty; status must name it
		}
		var members []int
		for i, c := range clusters {
			if !taken[i] && target.Selects(def.ClusterName, def.ClusterSelector, def.ClusterGroup, def.ClusterGroupSelector, c) {
				taken[i] = true
				members = append(members, i)
			}
		}
		budget, _ := Limit(len(members), def.MaxUnavailable, s.MaxUnavailable)
		part := Partition{Name: def.Name, MaxUnavailable: budget, Members: members}
		if g := def.Gate; g != nil {
			part.Approval = g.Approval
			part.Soak, _ = soakOf(g)
		}
		p.Partitions = append(p.Partitions, part)
	}
	var rest []int
	for i := range clusters {
		if !taken[i] {
			rest = append(rest, i)
		}
	}
	if len(s.Partitions) == 0 || len(rest) > 0 {
		name := "All"
		if len(s.Partitions) > 0 {
			name = UnmatchedPartition
		}
		p.Partitions = append(p.Partitions, auto(s, rest, name)...)
	}
	p.MaxUnavailablePartitions, _ = Limit(len(p.Partitions), s.MaxUnavailablePartitions, &defaultMaxUnavailablePartitions)
	return p, nil
}

// auto splits members as Fleet's automatic partitions do: one partition (called name) below the
// threshold or when autoPartitionSize is 0, else pieces of autoPartitionSize named by their offsets.
func auto(s *fleet.RolloutStrategy, members []int, name string) []Partition {
	threshold := DefaultAutoPartitionThreshold
	if s.AutoPartitionThreshold != nil {
		threshold = *s.AutoPartitionThreshold
	}
	off := s.AutoPartitionSize != nil && s.AutoPartitionSize.Type == intstr.Int && s.AutoPartitionSize.IntVal <= 0
	if off || threshold <= 0 || len(members) < threshold {
		budget, _ := Limit(len(members), s.MaxUnavailable)
		return []Partition{{Name: name, MaxUnavailable: budget, Members: members}}
	}
	size, _ := Limit(len(members), s.AutoPartitionSize, &defaultAutoPartitionSize)
	var out []Partition
	for offset := 0; offset < len(members); offset += size {
		piece := members[offset:min(offset+size, len(members))]
		budget, _ := Limit(len(piece), s.MaxUnavailable)
		out = append(out, Partition{Name: fmt.Sprintf("Partition %d - %d", offset, offset+len(piece)), MaxUnavailable: budget, Members: piece})
	}
	return out
}
