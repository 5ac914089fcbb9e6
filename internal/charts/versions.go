package charts

import (
	"fmt"
	"sort"
	"strings"

	"github.com/Masterminds/semver/v3"
)

// pickVersion chooses among a chart's published versions as Helm does (repo.IndexFile.Get): a version
// equal to want as written wins; else the newest that satisfies want as a semver constraint; an empty
// want is the newest stable version (a constraint never matches a prerelease unless it names one).
func pickVersion(versions []string, want string) (string, error) {
	want = strings.TrimSpace(want)
	if want != "" {
		for _, v := range versions {
			if v == want {
				return v, nil
			}
		}
	}
	expr := want
	if expr == "" {
		expr = "*"
	}
	constraint, err := semver.NewConstraint(expr)
	if err != nil {
		return "", fmt.Errorf("version %q is neither a version nor a semver constraint: %v", want, err)
	}
	sorted := sortVersions(versions)
	for _, v := range sorted {
		if constraint.Check(v.sv) {
			return v.raw, nil
		}
	}
	return "", noMatch(want, sorted)
}

type version struct {
	raw string
	sv  *semver.Version
}

// sortVersions is versions that parse as semver, newest first.
func sortVersions(versions []string) []version {
	var out []version
	for _, v := range versions {
		sv, err := semver.NewVersion(v)
		if err != nil {
			continue
		}
		out = append(out, version{raw: v, sv: sv})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].sv.GreaterThan(out[j].sv) })
	return out
}

func noMatch(want string, sorted []version) error {
	if len(sorted) == 0 {
		return fmt.Errorf("no versions are published")
	}
	const shown = 5
	var names []string
	for i, v := range sorted {
		if i == shown {
			names = append(names, fmt.Sprintf("and %d more", len(sorted)-shown))
			break
		}
		names = append(names, v.raw)
	}
	if want == "" {
		return fmt.Errorf("no stable version is published (available: %s); a prerelease must be named by its version", strings.Join(names, ", "))
	}
	return fmt.Errorf("no version matches %q (available: %s)", want, strings.Join(names, ", "))
}
