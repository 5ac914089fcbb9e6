// Command testreport reads `go test -json` on stdin and prints what `make unit` ran: each package's
// result, every failure with its output, and every skipped test with the reason it gave, grouped, so a
// fast tier says plainly what it leaves to `make test`. It exits 1 when a test or a build failed.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
	"strings"
)

type event struct {
	Action  string
	Package string
	Test    string
	Output  string
	Elapsed float64
}

// reasonLine is a t.Skip/t.Log line as go test prints it: "    file_test.go:12: text".
var reasonLine = regexp.MustCompile(`^\s+\S+\.go:\d+: (.*)$`)

func main() {
	os.Exit(report(os.Stdin, os.Stdout))
}

func report(in io.Reader, out io.Writer) int {
	outputs := map[string][]string{} // package/test -> its output lines
	skipped := map[string][]string{} // reason -> tests
	var failed []string
	var pkgs []string
	passed, skips := 0, 0
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var e event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			fmt.Fprintln(out, sc.Text()) // a build error is printed as plain text
			continue
		}
		id := e.Package + " " + e.Test
		switch e.Action {
		case "output":
			outputs[id] = append(outputs[id], strings.TrimRight(e.Output, "\n"))
		case "pass":
			if e.Test == "" {
				pkgs = append(pkgs, fmt.Sprintf("ok   %s %.1fs", e.Package, e.Elapsed))
			} else {
				passed++
			}
		case "fail":
			if e.Test == "" {
				pkgs = append(pkgs, fmt.Sprintf("FAIL %s %.1fs", e.Package, e.Elapsed))
				if len(outputs[id]) > 0 {
					failed = append(failed, id+"\n"+strings.Join(outputs[id], "\n"))
				}
			} else if !strings.Contains(e.Test, "/") {
				failed = append(failed, id+"\n"+strings.Join(outputs[id], "\n"))
			}
		case "skip":
			if e.Test == "" {
				continue // a package without tests
			}
			skips++
			reason := "(no reason given)"
			for _, l := range outputs[id] {
				if m := reasonLine.FindStringSubmatch(l); m != nil {
					reason = m[1]
				}
			}
			skipped[reason] = append(skipped[reason], strings.TrimPrefix(e.Package, "github.com/flotilla-gitops/flotilla/")+"."+e.Test)
		}
	}
	for _, p := range pkgs {
		fmt.Fprintln(out, p)
	}
	reasons := make([]string, 0, len(skipped))
	for r := range skipped {
		reasons = append(reasons, r)
	}
	sort.Strings(reasons)
	fmt.Fprintf(out, "\n%d tests passed, %d failed, %d skipped\n", passed, len(failed), skips)
	for _, r := range reasons {
		fmt.Fprintf(out, "skipped (%d): %s\n", len(skipped[r]), r)
		for _, t := range skipped[r] {
			fmt.Fprintf(out, "    %s\n", t)
		}
	}
	for _, f := range failed {
		fmt.Fprintf(out, "\nFAILED %s\n", f)
	}
	if len(failed) > 0 || sc.Err() != nil {
		return 1
	}
	return 0
}
