// Command flotilla-bench runs Flotilla's benchmarks (`make bench`, `make bench-quick`), prints a table and
// writes the results as JSON. Benchmarks report: a missed target never fails the command, an experiment that
// could not be measured (a broken harness) does.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/flotilla-gitops/flotilla/bench"
	"github.com/flotilla-gitops/flotilla/internal/envdefault"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "flotilla-bench:", err)
		os.Exit(1)
	}
}

func run() error {
	exe, _ := os.Executable()
	experiments := flag.String("experiments", "", "comma-separated experiments to run (default all but the scale ones): "+strings.Join(slices.Concat(bench.Experiments, bench.ScaleExperiments), ", "))
	quick := flag.Bool("quick", false, "every experiment at a small scale, in a few minutes")
	scale := flag.Bool("scale", false, "the scale experiments ("+strings.Join(bench.ScaleExperiments, ", ")+"; env "+bench.ScaleClustersEnv+" sets their clusters), which a run leaves out unless named")
	out := flag.String("out", envdefault.Or("BENCH_OUT", filepath.Join("bench", "out", "results.json")), "where the JSON results go (env BENCH_OUT)")
	binDir := flag.String("bin", filepath.Dir(exe), "folder holding temporal, etcd, kube-apiserver and flotilla-worker")
	apiservers := flag.Int("apiservers", 0, "real kube-apiservers to run (default 10, quick 3)")
	workDir := flag.String("workdir", "", "where clusters, databases and logs go (default a temporary folder, removed afterwards)")
	stockTemporal := flag.Bool("stock-temporal", false, "run the Temporal dev server with its default dynamic config instead of bench.TunedTemporal")
	compareBin := flag.String("compare-bin", "", "compare with the flotilla-worker and flotilla-agent in this folder (a base build beside the same tools; `make bench-compare` makes one), interleaved")
	baseName := flag.String("base-name", "base", "what --compare-bin was built from, for the report")
	rounds := flag.Int("rounds", 3, "with --compare-bin: runs of each side")
	flag.Parse()

	dir := *workDir
	if dir == "" {
		tmp, err := os.MkdirTemp("", "flotilla-bench-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		dir = tmp
	} else if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
		// Clusters and Temporal would start on an earlier run's state, and every measurement would be wrong.
		return fmt.Errorf("--workdir %s is not empty: remove it or name a new folder", dir)
	}
	var names []string
	for _, n := range strings.Split(*experiments, ",") {
		if n = strings.TrimSpace(n); n != "" {
			names = append(names, n)
		}
	}
	if *scale {
		names = append(names, bench.ScaleExperiments...)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cfg := bench.Config{BinDir: *binDir, WorkDir: dir, Experiments: names, Quick: *quick,
		APIServers: *apiservers, Log: os.Stderr, TemporalDynamicConfig: dynamicConfig(*stockTemporal)}
	if *compareBin != "" {
		return compare(ctx, bench.CompareConfig{Config: cfg, BaseBinDir: *compareBin, BaseName: *baseName, Rounds: *rounds}, *out)
	}
	rep, err := bench.Run(ctx, cfg)
	if len(rep.Results) > 0 {
		fmt.Println()
		bench.PrintTable(os.Stdout, rep.Results)
		if werr := bench.WriteReport(*out, rep); werr != nil {
			return werr
		}
		fmt.Printf("\nresults: %s\n", *out)
	}
	if err != nil {
		return err
	}
	if failed := rep.Failed(); len(failed) > 0 {
		return fmt.Errorf("experiments that could not be measured: %s", strings.Join(failed, ", "))
	}
	return nil
}

// compare runs both sides, prints the comparison and writes it. Only the working tree's side can fail the
// command, and only by not being measured: a base that cannot run these experiments (an older contract) is
// reported, and a number never fails it.
func compare(ctx context.Context, cc bench.CompareConfig, out string) error {
	c, err := bench.Compare(ctx, cc)
	fmt.Println()
	bench.PrintComparison(os.Stdout, c)
	if werr := bench.WriteComparison(out, c); werr != nil {
		return werr
	}
	fmt.Printf("\ncomparison: %s\n", out)
	if err != nil {
		return err
	}
	if len(c.NewFailures) > 0 {
		return fmt.Errorf("the working tree's side could not be measured: %s", strings.Join(c.NewFailures, "; "))
	}
	return nil
}

func dynamicConfig(stock bool) map[string]string {
	if stock {
		return map[string]string{}
	}
	return nil
}
