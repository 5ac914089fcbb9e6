package charts

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"helm.sh/helm/v3/pkg/repo"
	"sigs.k8s.io/yaml"
)

// indexMemo is a repository's parsed index.yaml: served without a request while fresh, then revalidated
// with a conditional GET so that an unchanged index is neither read nor parsed again.
type indexMemo struct {
	index      *repo.IndexFile
	validators validators
	checked    time.Time
}

// index is repoURL's index.yaml. One poll resolves many bundles from one repository: within IndexTTL
// they share one GET, and concurrent callers share one flight.
func (f *Fetcher) index(ctx context.Context, repoURL string, a *Auth) (*repo.IndexFile, error) {
	key := "index\x00" + repoURL + "\x00" + a.fingerprint()
	f.mu.Lock()
	memo := f.indexes[key]
	f.mu.Unlock()
	if memo != nil && f.now().Sub(memo.checked) < f.indexTTL() {
		return memo.index, nil
	}
	v, err := f.flight(ctx, key, func(ctx context.Context) (any, error) {
		var cond *validators
		if memo != nil {
			cond = &memo.validators
		}
		resp, err := f.get(ctx, repoURL+"/index.yaml", a, f.maxIndexBytes(), "index.yaml", cond)
		if err != nil {
			return nil, err
		}
		next := &indexMemo{validators: resp.validators, checked: f.now()}
		if resp.notModified {
			next.index = memo.index
		} else if next.index, err = parseIndex(resp.body); err != nil {
			return nil, err
		}
		f.mu.Lock()
		f.indexes[key] = next
		f.mu.Unlock()
		return next.index, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*repo.IndexFile), nil
}

// parseIndex reads an index.yaml as Helm does (JSON or YAML, invalid entries skipped, newest first), but
// leniently: a field Helm does not know is ignored rather than refused.
func parseIndex(data []byte) (*repo.IndexFile, error) {
	if len(data) == 0 {
		return nil, errors.New("index.yaml is empty")
	}
	index := &repo.IndexFile{}
	var err error
	if json.Valid(data) {
		err = json.Unmarshal(data, index)
	} else {
		err = yaml.Unmarshal(data, index)
	}
	if err != nil {
		return nil, fmt.Errorf("index.yaml does not parse: %v", err)
	}
	if index.APIVersion == "" {
		return nil, errors.New("index.yaml has no apiVersion: it is not a Helm repository index")
	}
	for name, versions := range index.Entries {
		valid := versions[:0]
		for _, v := range versions {
			if v != nil && v.Metadata != nil && v.Version != "" {
				valid = append(valid, v)
			}
		}
		index.Entries[name] = valid
	}
	index.SortEntries()
	return index, nil
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
