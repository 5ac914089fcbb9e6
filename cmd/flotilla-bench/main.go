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
	experiments := flag.String("experiments", "", "comma-separated experiments to run (default all): "+strings.Join(bench.Experiments, ", "))
	quick := flag.Bool("quick", false, "every experiment at a small scale, in a few minutes")
	out := flag.String("out", envdefault.Or("BENCH_OUT", filepath.Join("bench", "out", "results.json")), "where the JSON results go (env BENCH_OUT)")
	binDir := flag.String("bin", filepath.Dir(exe), "folder holding temporal, etcd, kube-apiserver and flotilla-worker")
	apiservers := flag.Int("apiservers", 0, "real kube-apiservers to run (default 10, quick 3)")
	workDir := flag.String("workdir", "", "where clusters, databases and logs go (default a temporary folder, removed afterwards)")
	stockTemporal := flag.Bool("stock-temporal", false, "run the Temporal dev server with its default dynamic config instead of bench.TunedTemporal")
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
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rep, err := bench.Run(ctx, bench.Config{BinDir: *binDir, WorkDir: dir, Experiments: names, Quick: *quick,
		APIServers: *apiservers, Log: os.Stderr, TemporalDynamicConfig: dynamicConfig(*stockTemporal)})
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

func dynamicConfig(stock bool) map[string]string {
	if stock {
		return map[string]string{}
	}
	return nil
}
