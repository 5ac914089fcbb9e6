package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"text/tabwriter"
	"time"
)

// CompareConfig is a comparison of two builds of Flotilla on the same experiments: the same benchmark
// harness and the same tools run the base's worker and the working tree's, interleaved (base, new, base,
// new, …) so that whatever else the machine does falls on both sides alike.
type CompareConfig struct {
	// Config is the working tree's side (its BinDir holds the tools and the working tree's binaries);
	// WorkDir receives one folder per run.
	Config
	// BaseBinDir holds the base's flotilla-worker and flotilla-agent beside the same tools.
	BaseBinDir string
	// BaseName names the base in the report (a commit, a tag).
	BaseName string
	// Rounds is how many times each side runs (default 3).
	Rounds int
}

// Comparison is what Compare measured, row by row.
type Comparison struct {
	Date    time.Time     `json:"date"`
	Machine string        `json:"machine"`
	Base    string        `json:"base"`
	Rounds  int           `json:"rounds"`
	Quick   bool          `json:"quick"`
	Rows    []ComparedRow `json:"rows"`
	// BaseFailures and NewFailures are the runs of a side that could not be measured, with why.
	BaseFailures []string `json:"base_failures,omitempty"`
	NewFailures  []string `json:"new_failures,omitempty"`
}

// ComparedRow is one experiment row measured on both sides.
type ComparedRow struct {
	Experiment string `json:"experiment"`
	Clusters   int    `json:"clusters"`
	Bundles    int    `json:"bundles"`
	// Base and New are flotilla_seconds over the rounds each side completed.
	Base Spread `json:"base"`
	New  Spread `json:"new"`
	// Ratio is New's median over Base's.
	Ratio float64 `json:"ratio"`
	// Verdict is "within spread" when the two sides' ranges overlap, else "faster" or "slower".
	Verdict       string `json:"verdict"`
	BaseDirect    Spread `json:"base_direct"`
	NewDirect     Spread `json:"new_direct"`
	BaseWorkerCPU Spread `json:"base_worker_cpu_seconds"`
	NewWorkerCPU  Spread `json:"new_worker_cpu_seconds"`
}

// Spread is a median with the range it came from.
type Spread struct {
	Median float64 `json:"median"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
	N      int     `json:"n"`
}

func spreadOf(v []float64) Spread {
	if len(v) == 0 {
		return Spread{}
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	m := s[len(s)/2]
	if len(s)%2 == 0 {
		m = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return Spread{Median: round(m, 2), Min: s[0], Max: s[len(s)-1], N: len(s)}
}

// verdict tells a difference the runs' own spread cannot explain from one it can: the medians must be
// further apart than either side's range is wide, and the ranges must not overlap.
func verdict(base, cur Spread) string {
	if base.N == 0 || cur.N == 0 {
		return "not measured"
	}
	noise := max(base.Max-base.Min, cur.Max-cur.Min)
	switch {
	case cur.Max < base.Min && base.Median-cur.Median > noise:
		return "faster"
	case cur.Min > base.Max && cur.Median-base.Median > noise:
		return "slower"
	}
	return "within spread"
}

// rowKey tells apart the rows one experiment makes (remote-chart-100's chart sources, agents-50x3's ways
// of reaching a cluster).
type rowKey struct {
	experiment, chartSource, clusterAccess string
	clusters, bundles                      int
}

type sideSamples struct{ seconds, direct, cpu []float64 }

// Compare runs the selected experiments Rounds times on each side, interleaved, and compares them. A run
// that fails is reported, not fatal: the other runs still count.
func Compare(ctx context.Context, cc CompareConfig) (Comparison, error) {
	if cc.Rounds <= 0 {
		cc.Rounds = 3
	}
	cmp := Comparison{Date: time.Now().UTC(), Machine: machine(), Base: cc.BaseName, Rounds: cc.Rounds, Quick: cc.Quick}
	samples := map[rowKey]*[2]sideSamples{}
	var order []rowKey
	sides := []struct {
		name string
		bin  string
		fail *[]string
	}{{"base", cc.BaseBinDir, &cmp.BaseFailures}, {"new", cc.BinDir, &cmp.NewFailures}}
	for round := 1; round <= cc.Rounds; round++ {
		for i, side := range sides {
			cfg := cc.Config
			cfg.BinDir, cfg.NoFloor = side.bin, true
			cfg.WorkDir = filepath.Join(cc.WorkDir, fmt.Sprintf("%s-%d", side.name, round))
			if err := os.MkdirAll(cfg.WorkDir, 0o755); err != nil {
				return cmp, err
			}
			if cc.Log != nil {
				fmt.Fprintf(cc.Log, "%s round %d/%d: %s\n", time.Now().Format("15:04:05"), round, cc.Rounds, side.name)
			}
			rep, err := Run(ctx, cfg)
			if ctx.Err() != nil {
				return cmp, ctx.Err()
			}
			if err != nil {
				*side.fail = append(*side.fail, fmt.Sprintf("round %d: %v", round, err))
			}
			for _, r := range rep.Results {
				if r.Failed {
					*side.fail = append(*side.fail, fmt.Sprintf("round %d: %s: %s", round, r.Experiment, r.Notes))
					continue
				}
				k := rowKey{r.Experiment, r.ChartSource, r.ClusterAccess, r.Clusters, r.Bundles}
				s, ok := samples[k]
				if !ok {
					s = &[2]sideSamples{}
					samples[k] = s
					order = append(order, k)
				}
				s[i].seconds = append(s[i].seconds, r.FlotillaSeconds)
				s[i].cpu = append(s[i].cpu, r.WorkerCPUSeconds)
				if r.DirectSeconds != nil {
					s[i].direct = append(s[i].direct, *r.DirectSeconds)
				}
			}
			_ = os.RemoveAll(cfg.WorkDir)
		}
	}
	for _, k := range order {
		s := samples[k]
		row := ComparedRow{Experiment: k.experiment, Clusters: k.clusters, Bundles: k.bundles,
			Base: spreadOf(s[0].seconds), New: spreadOf(s[1].seconds),
			BaseDirect: spreadOf(s[0].direct), NewDirect: spreadOf(s[1].direct),
			BaseWorkerCPU: spreadOf(s[0].cpu), NewWorkerCPU: spreadOf(s[1].cpu)}
		for _, detail := range []string{k.chartSource, k.clusterAccess} {
			if detail != "" {
				row.Experiment += " (" + detail + ")"
			}
		}
		if row.Base.Median > 0 {
			row.Ratio = round(row.New.Median/row.Base.Median, 2)
		}
		row.Verdict = verdict(row.Base, row.New)
		cmp.Rows = append(cmp.Rows, row)
	}
	return cmp, nil
}

// WriteComparison writes the comparison as JSON to path, creating its folder.
func WriteComparison(path string, c Comparison) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// PrintComparison writes the comparison as a table: medians, ranges, the ratio and its verdict per row.
func PrintComparison(w io.Writer, c Comparison) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "experiment\tclusters\tbundles\tbase %s s median (min–max)\tnew s median (min–max)\tnew/base\tverdict\tdirect s base / new\tworker CPU s base / new\n", c.Base)
	for _, r := range c.Rows {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\t%.2f\t%s\t%.2f / %.2f\t%.2f / %.2f\n", r.Experiment, r.Clusters, r.Bundles,
			fmtSpread(r.Base), fmtSpread(r.New), r.Ratio, r.Verdict, r.BaseDirect.Median, r.NewDirect.Median,
			r.BaseWorkerCPU.Median, r.NewWorkerCPU.Median)
	}
	_ = tw.Flush()
	for _, f := range c.BaseFailures {
		fmt.Fprintf(w, "base run not measured: %s\n", f)
	}
	for _, f := range c.NewFailures {
		fmt.Fprintf(w, "new run not measured: %s\n", f)
	}
}

func fmtSpread(s Spread) string {
	if s.N == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f (%.2f–%.2f, n=%d)", s.Median, s.Min, s.Max, s.N)
}
