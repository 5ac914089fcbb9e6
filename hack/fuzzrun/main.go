// Command fuzzrun runs every Go fuzz target of the repository for a while each (`make fuzz`), one after
// the other, and prints what each reached: executions, new interesting inputs, and findings. A finding is
// a failing input Go wrote to the package's testdata/fuzz, which becomes a committed corpus entry once its
// cause is fixed. It writes the figures as JSON, as `make bench` does, and exits 1 when any target found
// something or could not run.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"
)

// Target is one fuzz function and what running it reached.
type Target struct {
	Package string `json:"package"`
	Name    string `json:"name"`
	// Execs is the number of inputs the fuzzing engine ran, seed corpus excluded.
	Execs int64 `json:"execs"`
	// NewInteresting is how many inputs widened coverage in this run; Corpus is the cached corpus after it.
	NewInteresting int     `json:"newInteresting"`
	Corpus         int     `json:"corpus"`
	Seconds        float64 `json:"seconds"`
	// Result is "ok", "finding" (a failing input was written) or "error" (it did not get to fuzz).
	Result       string `json:"result"`
	FailingInput string `json:"failingInput,omitempty"`
	// Output is the tail of go test's output when the result is not ok.
	Output string `json:"output,omitempty"`
}

// Report is the JSON fuzzrun writes.
type Report struct {
	FuzzTime string `json:"fuzzTime"`
	// MinimizeTime bounds how long the engine shrinks each new interesting input; it counts no executions
	// meanwhile, so Go's default of 60 s left slow targets a handful of executions in a short run.
	MinimizeTime string   `json:"minimizeTime"`
	Targets      []Target `json:"targets"`
	TotalExecs   int64    `json:"totalExecs"`
	Findings     int      `json:"findings"`
	Errors       int      `json:"errors"`
}

func main() {
	fuzzTime := flag.String("fuzztime", "30s", "how long each target runs (go test -fuzztime: a duration, or Nx executions)")
	minimizeTime := flag.String("minimizetime", "5s", "how long the engine may shrink one input (go test -fuzzminimizetime)")
	out := flag.String("out", "", "write the report as JSON to this file")
	match := flag.String("run", "", "only the targets whose name matches this regexp")
	root := flag.String("root", ".", "the repository to search for fuzz targets")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, runOptions{root: *root, fuzzTime: *fuzzTime, minimizeTime: *minimizeTime, match: *match, out: *out}, os.Stdout))
}

type runOptions struct {
	root, fuzzTime, minimizeTime, match, out string
}

func run(ctx context.Context, o runOptions, w io.Writer) int {
	root, fuzzTime, match, out := o.root, o.fuzzTime, o.match, o.out
	targets, err := discover(root)
	if err != nil {
		fmt.Fprintln(w, "fuzzrun:", err)
		return 1
	}
	if match != "" {
		re, err := regexp.Compile(match)
		if err != nil {
			fmt.Fprintln(w, "fuzzrun: -run:", err)
			return 1
		}
		targets = filterTargets(targets, re)
	}
	if len(targets) == 0 {
		fmt.Fprintln(w, "fuzzrun: no fuzz targets found")
		return 1
	}
	rep := Report{FuzzTime: fuzzTime, MinimizeTime: o.minimizeTime}
	for i, t := range targets {
		fmt.Fprintf(w, "[%d/%d] %s %s for %s\n", i+1, len(targets), t.Package, t.Name, fuzzTime)
		t = fuzz(ctx, root, t, fuzzTime, o.minimizeTime)
		fmt.Fprintf(w, "    %s: %d execs, %d new interesting, %.0fs\n", t.Result, t.Execs, t.NewInteresting, t.Seconds)
		if t.Result != "ok" {
			fmt.Fprintln(w, indent(t.Output))
		}
		rep.Targets = append(rep.Targets, t)
		rep.TotalExecs += t.Execs
		switch t.Result {
		case "finding":
			rep.Findings++
		case "error":
			rep.Errors++
		}
		if ctx.Err() != nil {
			break
		}
	}
	printTable(w, rep)
	if out != "" {
		if err := writeJSON(out, rep); err != nil {
			fmt.Fprintln(w, "fuzzrun:", err)
			return 1
		}
		fmt.Fprintln(w, "wrote", out)
	}
	if rep.Findings > 0 || rep.Errors > 0 || ctx.Err() != nil {
		return 1
	}
	return 0
}

var fuzzFunc = regexp.MustCompile(`(?m)^func (Fuzz\w+)\(\w+ \*testing\.F\)`)

// discover finds the fuzz targets from the sources rather than `go test -list`, which would build every
// test binary and run TestMains that start servers.
func discover(root string) ([]Target, error) {
	var targets []Target
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case "testdata", "bin", "node_modules", ".git", ".run":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, filepath.Dir(path))
		if err != nil {
			return err
		}
		for _, m := range fuzzFunc.FindAllSubmatch(src, -1) {
			targets = append(targets, Target{Package: "./" + filepath.ToSlash(rel), Name: string(m[1])})
		}
		return nil
	})
	sort.Slice(targets, func(i, j int) bool {
		if targets[i].Package != targets[j].Package {
			return targets[i].Package < targets[j].Package
		}
		return targets[i].Name < targets[j].Name
	})
	return targets, err
}

func filterTargets(ts []Target, re *regexp.Regexp) []Target {
	var out []Target
	for _, t := range ts {
		if re.MatchString(t.Name) {
			out = append(out, t)
		}
	}
	return out
}

// progress is the engine's status line: "fuzz: elapsed: 3s, execs: 1234 (411/sec), new interesting: 2 (total: 9)".
var progress = regexp.MustCompile(`fuzz: elapsed: \d+s, execs: (\d+) \(\d+/sec\), new interesting: (\d+) \(total: (\d+)\)`)

var failingInput = regexp.MustCompile(`Failing input written to (\S+)`)

func fuzz(ctx context.Context, root string, t Target, fuzzTime, minimizeTime string) Target {
	start := time.Now()
	args := []string{"test", "-run", "^$", "-fuzz", "^" + t.Name + "$", "-fuzztime", fuzzTime}
	if minimizeTime != "" {
		args = append(args, "-fuzzminimizetime", minimizeTime)
	}
	cmd := exec.CommandContext(ctx, goBinary(), append(args, t.Package)...)
	cmd.Dir = root
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// The engine's workers are children of the test binary: a cancelled run takes its whole group down.
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	outPipe, err := cmd.StdoutPipe()
	if err != nil {
		t.Result, t.Output = "error", err.Error()
		return t
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Result, t.Output = "error", err.Error()
		return t
	}
	var lines []string
	sc := bufio.NewScanner(outPipe)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		line := sc.Text()
		lines = append(lines, line)
		if m := progress.FindStringSubmatch(line); m != nil {
			t.Execs, _ = strconv.ParseInt(m[1], 10, 64)
			t.NewInteresting, _ = strconv.Atoi(m[2])
			t.Corpus, _ = strconv.Atoi(m[3])
		}
		if m := failingInput.FindStringSubmatch(line); m != nil {
			t.FailingInput = filepath.ToSlash(filepath.Join(t.Package, m[1]))
		}
	}
	err = cmd.Wait()
	t.Seconds = time.Since(start).Seconds()
	switch {
	case err == nil:
		t.Result = "ok"
	case t.FailingInput != "":
		t.Result = "finding"
	default:
		t.Result = "error"
	}
	if t.Result != "ok" {
		t.Output = tail(lines, 40)
	}
	return t
}

func goBinary() string {
	if g := os.Getenv("GO"); g != "" {
		return g
	}
	return "go"
}

func tail(lines []string, n int) string {
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func indent(s string) string {
	return "      " + strings.ReplaceAll(s, "\n", "\n      ")
}

func printTable(w io.Writer, rep Report) {
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "package\ttarget\texecs\tnew interesting\tcorpus\tseconds\tresult\t")
	for _, t := range rep.Targets {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%.0f\t%s\t\n", t.Package, t.Name, t.Execs, t.NewInteresting, t.Corpus, t.Seconds, t.Result)
	}
	tw.Flush()
	fmt.Fprintf(w, "\n%d targets, %d executions in all, %d findings, %d that did not run\n", len(rep.Targets), rep.TotalExecs, rep.Findings, rep.Errors)
	for _, t := range rep.Targets {
		if t.FailingInput != "" {
			fmt.Fprintf(w, "finding: %s %s: %s (reproduce: go test %s -run '^%s$/^%s$')\n", t.Package, t.Name, t.FailingInput,
				t.Package, t.Name, filepath.Base(t.FailingInput))
		}
	}
}

func writeJSON(path string, rep Report) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	data, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(data, '\n'), 0o644)
}
