package tests

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/flotilla-gitops/flotilla/tests/env/needs"
	"github.com/flotilla-gitops/flotilla/tests/harness"
)

// flagsOtherToolsTake are flags the guide names for programs that are not Flotilla's: the Temporal CLI,
// docker-compose, kubectl, git, make. Each is listed here on purpose; anything else the guide names must be
// a flag of one of Flotilla's binaries.
var flagsOtherToolsTake = map[string]bool{
	"--type": true, "--workflow-id": true, "--input": true, "--task-timeout": true, // temporal workflow start
	"--rm":               true, // docker-compose run
	"--pass-credentials": true, // Helm's, which helmPassCredentials mirrors
	"--for":              true, // kubectl wait
	"--create-namespace": true, // helm install
}

// The operator's guide is read by people who then type what it says: every flag it names (in code, on a
// line or in a block that runs a Flotilla binary) exists in that binary's --help today, and every relative
// link between the pages resolves.
func TestTheGuideNamesOnlyFlagsTheBinariesHave(t *testing.T) {
	t.Parallel()
	bin := needs.Binaries(t, "flotilla", "flotilla-worker", "flotilla-agent", "flotilla-controller", "flotilla-dev", "flotilla-bench")
	known := map[string]bool{}
	flagRE := regexp.MustCompile(`--[a-z][a-z0-9-]+`)
	goFlagRE := regexp.MustCompile(`(?m)^\s+-([a-z][a-z0-9-]+)`)
	addHelp := func(args ...string) string {
		out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
		if err != nil && !strings.Contains(strings.ToLower(string(out)), "usage") {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
		for _, f := range flagRE.FindAllString(string(out), -1) {
			known[f] = true
		}
		// The Go flag package (worker, agent, benchmark) prints "  -name type" for --name.
		for _, m := range goFlagRE.FindAllStringSubmatch(string(out), -1) {
			known["--"+m[1]] = true
		}
		return string(out)
	}
	for _, b := range []string{"flotilla-worker", "flotilla-agent", "flotilla-controller", "flotilla-dev", "flotilla-bench"} {
		addHelp(filepath.Join(bin, b), "--help")
	}
	// The CLI's commands, walked from its help down every "Available Commands" list.
	var walk func(path []string)
	walk = func(path []string) {
		out := addHelp(append(append([]string{filepath.Join(bin, "flotilla")}, path...), "--help")...)
		_, list, ok := strings.Cut(out, "Available Commands:")
		if !ok {
			return
		}
		list, _, _ = strings.Cut(list, "\n\n")
		for _, line := range strings.Split(strings.TrimSpace(list), "\n") {
			if name := strings.Fields(line); len(name) > 0 && name[0] != "help" && name[0] != "completion" {
				walk(append(append([]string{}, path...), name[0]))
			}
		}
	}
	walk(nil)
	if len(known) < 40 {
		t.Fatalf("read only %d flags from the binaries' help; the walk is broken", len(known))
	}

	pages, err := filepath.Glob(filepath.Join(harness.Root(), "docs", "guide", "*.md"))
	if err != nil || len(pages) < 5 {
		t.Fatalf("the guide's pages: %v %v", pages, err)
	}
	pages = append(pages, filepath.Join(harness.Root(), "README.md"))
	inlineCode := regexp.MustCompile("`[^`]+`")
	named := 0
	for _, page := range pages {
		data, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(harness.Root(), page)
		fence := false
		for i, line := range strings.Split(string(data), "\n") {
			if strings.HasPrefix(line, "```") {
				fence = !fence
				continue
			}
			var code []string
			if fence {
				if strings.Contains(line, "flotilla") && !strings.HasPrefix(strings.TrimSpace(line), "#") {
					code = []string{line}
				}
			} else {
				code = inlineCode.FindAllString(line, -1)
			}
			for _, c := range code {
				for _, f := range flagRE.FindAllString(c, -1) {
					named++
					if !known[f] && !flagsOtherToolsTake[f] {
						t.Errorf("%s:%d: %s is no flag of flotilla, flotilla-worker, flotilla-agent, flotilla-controller, flotilla-dev or flotilla-bench (in %s)", rel, i+1, f, c)
					}
				}
			}
		}
	}
	if named < 50 {
		t.Fatalf("the guide names only %d flags; the scan is broken", named)
	}
}

// A page moved or renamed leaves no link to it dangling: every relative link of the README, CONTRIBUTING
// and docs/ names a file of the checkout.
func TestEveryRelativeLinkOfTheDocsResolves(t *testing.T) {
	t.Parallel()
	root := harness.Root()
	pages := []string{filepath.Join(root, "README.md"), filepath.Join(root, "CONTRIBUTING.md")}
	err := filepath.WalkDir(filepath.Join(root, "docs"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".md") {
			pages = append(pages, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	linkRE := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	links := 0
	for _, page := range pages {
		data, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, page)
		for i, line := range strings.Split(string(data), "\n") {
			for _, m := range linkRE.FindAllStringSubmatch(line, -1) {
				target, _, _ := strings.Cut(m[1], "#")
				if target == "" || strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				links++
				if _, err := os.Stat(filepath.Join(filepath.Dir(page), target)); err != nil {
					t.Errorf("%s:%d: link %s: %v", rel, i+1, m[1], err)
				}
			}
		}
	}
	if links < 50 {
		t.Fatalf("found only %d relative links; the scan is broken", links)
	}
}
