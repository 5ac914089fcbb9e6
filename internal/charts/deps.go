package charts

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"helm.sh/helm/v3/pkg/chart"

	"github.com/flotilla-gitops/flotilla/api"
)

// Chart.yaml dependencies are fetched as `helm dependency build` would: each one charts/ does not hold
// (by name, as Helm's install checks) is looked up in its repository — https://, oci://, or a file://
// folder the caller loads — at the version Chart.lock pins while it still satisfies Chart.yaml's
// constraint, else the newest that does. Helm's install then applies alias, condition, tags and
// import-values to the subcharts, as for vendored ones. Dependencies of dependencies are not fetched:
// a packaged chart carries its own.

// FileDependency loads the chart a `file://` dependency names, the path as written after file://
// (relative to the chart's folder); the caller confines it to the repository.
type FileDependency func(path string) (*chart.Chart, error)

// LockDependencies locks the Chart.yaml dependencies of c that its charts/ does not hold. fileDep loads
// file:// dependencies; without it (a chart from a repository) they must be in charts/. Every missing
// dependency is reported, each as a *SourceError naming the chart, the dependency and its repository.
func (f *Fetcher) LockDependencies(ctx context.Context, c *chart.Chart, creds Credentials, fileDep FileDependency) ([]api.ChartLock, error) {
	f.init()
	var locks []api.ChartLock
	var errs []error
	for _, d := range c.Metadata.Dependencies {
		if d == nil || vendored(c, d) {
			continue
		}
		lock, err := f.lockDependency(ctx, c, d, creds, fileDep)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		locks = append(locks, lock)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return locks, nil
}

// vendored is Helm's test (action.CheckDependencies): a subchart of the same name is in charts/.
func vendored(c *chart.Chart, d *chart.Dependency) bool {
	for _, sub := range c.Dependencies() {
		if sub.Name() == d.Name {
			return true
		}
	}
	return false
}

func dependencyName(c *chart.Chart, d *chart.Dependency) string {
	return fmt.Sprintf("chart %q: dependency %q (version %s, repository %s)", c.Name(), d.Name, orNone(d.Version), orNone(redact(d.Repository)))
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// lockKey is what a dependency's lock is called: its alias, else its name.
func lockKey(d *chart.Dependency) string {
	if d.Alias != "" {
		return d.Alias
	}
	return d.Name
}

func (f *Fetcher) lockDependency(ctx context.Context, c *chart.Chart, d *chart.Dependency, creds Credentials, fileDep FileDependency) (api.ChartLock, error) {
	name := dependencyName(c, d)
	fail := func(format string, args ...any) (api.ChartLock, error) {
		return api.ChartLock{}, &SourceError{Source: name, Err: fmt.Errorf(format, args...)}
	}
	repoURL := strings.TrimSpace(d.Repository)
	want := lockedVersion(c, d)
	var lock api.ChartLock
	var err error
	switch {
	case repoURL == "":
		return fail("charts/ does not hold it and it names no repository to fetch it from")
	case strings.HasPrefix(repoURL, "@") || strings.HasPrefix(repoURL, "alias:"):
		return fail("a repository added with `helm repo add` is not known here: write its URL (https:// or oci://)")
	case strings.HasPrefix(repoURL, "file://"):
		if fileDep == nil {
			return fail("a file:// dependency of a chart from a repository must be packaged in its charts/")
		}
		p := strings.TrimPrefix(repoURL, "file://")
		sub, err := fileDep(p)
		if err != nil {
			return api.ChartLock{}, &SourceError{Source: name, Err: err}
		}
		if sub.Name() != d.Name {
			return fail("the chart at %s is named %q", p, sub.Name())
		}
		if _, err := pickVersion([]string{sub.Metadata.Version}, d.Version); d.Version != "" && err != nil {
			return fail("the chart at %s is version %s", p, sub.Metadata.Version)
		}
		lock = api.ChartLock{URL: repoURL, Version: sub.Metadata.Version}
	default:
		if err := checkURL(repoURL); err != nil && isSupported(repoURL) {
			return fail("%v", err)
		}
		switch schemeOf(repoURL) {
		case "https", "http":
			lock, err = f.resolveIndex(ctx, name, strings.TrimSuffix(repoURL, "/"), d.Name, want, creds)
			var se *SourceError
			if errors.As(err, &se) && se.Op == "chart "+strconv.Quote(d.Name) {
				se.Op = "" // the dependency's name says it already
			}
		case "oci":
			ref := strings.TrimSuffix(strings.TrimPrefix(repoURL, "oci://"), "/") + "/" + d.Name
			lock, err = f.resolveOCI(ctx, name, ref, want, creds)
		default:
			return fail("only https://, http://, oci:// and file:// repositories are supported")
		}
		if err != nil {
			return api.ChartLock{}, err
		}
	}
	lock.Source = lockKey(d)
	return lock, nil
}

// lockedVersion is the version to look for: Chart.lock's, while it satisfies Chart.yaml's constraint
// (an edited Chart.yaml wins over a stale Chart.lock, as `helm dependency build` refuses a stale lock).
func lockedVersion(c *chart.Chart, d *chart.Dependency) string {
	if c.Lock == nil {
		return d.Version
	}
	for _, l := range c.Lock.Dependencies {
		if l == nil || l.Name != d.Name || strings.TrimSuffix(l.Repository, "/") != strings.TrimSuffix(d.Repository, "/") {
			continue
		}
		if d.Version == "" {
			return l.Version
		}
		if _, err := pickVersion([]string{l.Version}, d.Version); err == nil {
			return l.Version
		}
	}
	return d.Version
}

// AddDependencies adds the charts locks pins to c as subcharts (each archive once, however many aliases
// name it). fileDep loads file:// dependencies, as for LockDependencies.
func (f *Fetcher) AddDependencies(ctx context.Context, c *chart.Chart, locks []api.ChartLock, creds Credentials, fileDep FileDependency) error {
	f.init()
	seen := map[string]bool{}
	for _, l := range locks {
		name := fmt.Sprintf("chart %q: dependency %q", c.Name(), l.Source)
		if l.Error != "" {
			return &SourceError{Source: name, Err: errors.New(l.Error)}
		}
		if strings.HasPrefix(l.URL, "file://") {
			if seen[l.URL] {
				continue
			}
			if fileDep == nil {
				return &SourceError{Source: name, Err: errors.New("a file:// dependency needs the chart's repository")}
			}
			sub, err := fileDep(strings.TrimPrefix(l.URL, "file://"))
			if err != nil {
				return &SourceError{Source: name, Err: err}
			}
			seen[l.URL] = true
			c.AddDependency(sub)
			continue
		}
		if seen[l.Digest] {
			continue
		}
		sub, err := f.load(ctx, l, creds)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		seen[l.Digest] = true
		c.AddDependency(sub)
	}
	return nil
}
