package charts

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/repo"
)

// indexMemo is a repository's parsed index.yaml: served without a request while fresh, then revalidated
// with a conditional GET so that an unchanged index is neither read nor parsed again.
type indexMemo struct {
	index      *repo.IndexFile
	size       int64
	validators validators
	checked    time.Time
}

// What an index may cost. A public repository's index.yaml runs to tens of MiB, nearly all of it
// descriptions, maintainers and icons; resolving reads only names, versions, URLs and digests, so only
// those are parsed and kept. The parsed indexes of all repositories together stay under
// indexMemoryBytes, the least recently used dropped first (it costs a full GET later, never a wrong
// answer), and an index listing more than maxIndexVersions versions is refused.
const (
	maxIndexVersions = 100_000
	indexMemoryBytes = 64 << 20
)

// index is repoURL's index.yaml. One poll resolves many bundles from one repository: within IndexTTL
// they share one GET, and concurrent callers share one flight.
func (f *Fetcher) index(ctx context.Context, repoURL string, a *Auth) (*repo.IndexFile, error) {
	key := "index\x00" + repoURL + "\x00" + a.fingerprint()
	memo, _ := f.indexes.get(key)
	if memo != nil && f.fresh(ctx, memo.checked) {
		return memo.index, nil
	}
	v, err := f.flight(ctx, flightKey(ctx, key), func(ctx context.Context) (any, error) {
		var cond *validators
		if memo != nil {
			cond = &memo.validators
		}
		resp, err := f.get(ctx, repoURL+"/index.yaml", a, f.maxIndexBytes(), "index.yaml", cond)
		if err != nil {
			return nil, err
		}
		next := &indexMemo{validators: resp.validators, checked: f.now()}
		if resp.notModified && memo != nil {
			next.index, next.size = memo.index, memo.size
		} else if next.index, next.size, err = parseIndex(resp.body); err != nil {
			return nil, err
		}
		f.indexes.put(key, next, next.size)
		return next.index, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*repo.IndexFile), nil
}

// rawIndex is the part of an index.yaml that resolving reads; the decoders skip everything else.
type rawIndex struct {
	APIVersion string                 `json:"apiVersion" yaml:"apiVersion"`
	Entries    map[string][]*rawEntry `json:"entries" yaml:"entries"`
}

type rawEntry struct {
	Name    string   `json:"name" yaml:"name"`
	Version string   `json:"version" yaml:"version"`
	URLs    []string `json:"urls" yaml:"urls"`
	Digest  string   `json:"digest" yaml:"digest"`
}

// parseIndex reads an index.yaml as Helm does (JSON or YAML, invalid entries skipped, newest first), but
// leniently (a field Helm does not know is ignored rather than refused) and sparingly: only what resolving
// needs is decoded and kept. It returns the index and about how many bytes it holds.
func parseIndex(data []byte) (*repo.IndexFile, int64, error) {
	if len(data) == 0 {
		return nil, 0, errors.New("index.yaml is empty")
	}
	var raw rawIndex
	var err error
	if json.Valid(data) {
		err = json.Unmarshal(data, &raw)
	} else {
		err = yaml.Unmarshal(data, &raw)
	}
	if err != nil {
		return nil, 0, fmt.Errorf("index.yaml does not parse: %v", err)
	}
	if raw.APIVersion == "" {
		return nil, 0, errors.New("index.yaml has no apiVersion: it is not a Helm repository index")
	}
	index := &repo.IndexFile{APIVersion: raw.APIVersion, Entries: make(map[string]repo.ChartVersions, len(raw.Entries))}
	var size int64
	count := 0
	for name, versions := range raw.Entries {
		valid := make(repo.ChartVersions, 0, len(versions))
		for _, v := range versions {
			if v == nil || v.Version == "" {
				continue
			}
			if count++; count > maxIndexVersions {
				return nil, 0, fmt.Errorf("index.yaml lists more than %d chart versions, the most Flotilla reads", maxIndexVersions)
			}
			cv := &repo.ChartVersion{Metadata: &chart.Metadata{Name: v.Name, Version: v.Version}, URLs: v.URLs, Digest: v.Digest}
			valid = append(valid, cv)
			size += 400 + int64(len(v.Name)+len(v.Version)+len(v.Digest))
			for _, u := range v.URLs {
				size += 16 + int64(len(u))
			}
		}
		index.Entries[name] = valid
		size += 64 + int64(len(name))
	}
	index.SortEntries()
	return index, size, nil
}

// entry picks the version of chart that want asks for.
func entry(index *repo.IndexFile, chart, want string) (*repo.ChartVersion, error) {
	versions, ok := index.Entries[chart]
	if !ok || len(versions) == 0 {
		var names []string
		for n := range index.Entries {
			names = append(names, n)
		}
		sort.Strings(names)
		if len(names) > 10 {
			names = append(names[:10], fmt.Sprintf("and %d more", len(names)-10))
		}
		return nil, fmt.Errorf("not in index.yaml (charts: %s)", strings.Join(names, ", "))
	}
	byVersion := make(map[string]*repo.ChartVersion, len(versions))
	raw := make([]string, len(versions))
	for i, v := range versions {
		raw[i] = v.Version
		byVersion[v.Version] = v
	}
	picked, err := pickVersion(raw, want)
	if err != nil {
		return nil, err
	}
	v := byVersion[picked]
	if len(v.URLs) == 0 {
		return nil, fmt.Errorf("version %s has no URL in index.yaml", picked)
	}
	return v, nil
}
