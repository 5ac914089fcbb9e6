package charts

import (
	"context"
	"errors"
	"fmt"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"

	"github.com/flotilla-gitops/flotilla/api"
)

// Load is the chart a lock pins, with the dependencies the lock lists added as subcharts: from memory or
// the cache when this worker has the archive, else fetched once (concurrent Loads of one digest share the
// download) and refused unless it hashes to the lock's digest. Each call returns a chart of its own.
func (f *Fetcher) Load(ctx context.Context, lock api.ChartLock, creds Credentials) (*chart.Chart, error) {
	f.init()
	if lock.Error != "" {
		// The plan's error already names the source.
		return nil, &SourceError{Err: errors.New(lock.Error)}
	}
	c, err := f.load(ctx, lock, creds)
	if err != nil {
		return nil, err
	}
	if err := f.AddDependencies(ctx, c, lock.Dependencies, creds, nil); err != nil {
		return nil, err
	}
	return c, nil
}

// load parses the archive of lock, without its locked dependencies. Credentials go only to the origin the
// lock records.
func (f *Fetcher) load(ctx context.Context, lock api.ChartLock, creds Credentials) (*chart.Chart, error) {
	files, err := f.archiveFiles(ctx, lock, boundTo(creds, lock.CredentialsOrigin))
	if err != nil {
		return nil, err
	}
	c, err := loader.LoadFiles(files)
	if err != nil {
		return nil, &SourceError{Source: "chart " + lock.URL, Err: fmt.Errorf("not a chart archive: %v", err)}
	}
	return c, nil
}

// archiveFiles are the expanded files of lock's archive: from memory, else the disk cache, else fetched.
func (f *Fetcher) archiveFiles(ctx context.Context, lock api.ChartLock, creds Credentials) ([]*loader.BufferedFile, error) {
	name := "chart " + redact(lock.URL)
	if _, err := parseDigest(lock.Digest); err != nil {
		return nil, &SourceError{Source: name, Err: err}
	}
	if files, ok := f.files.get(lock.Digest); ok {
		return files, nil
	}
	v, err := f.flight(ctx, "load\x00"+lock.Digest, func(ctx context.Context) (any, error) {
		if data, ok := f.cached(lock.Digest); ok {
			files, err := expand(data)
			if err != nil {
				return nil, &SourceError{Source: name, Err: err}
			}
			f.files.put(lock.Digest, files)
			return files, nil
		}
		data, err := f.download(ctx, lock, creds)
		if f.Fetched != nil {
			f.Fetched(schemeOf(lock.URL), err)
		}
		if err != nil {
			return nil, err
		}
		if got := digestOf(data); got != lock.Digest {
			return nil, &SourceError{Source: name, URL: redact(lock.URL),
				Err: fmt.Errorf("%w (resolved %s, fetched %s)", ErrChanged, lock.Digest, got)}
		}
		files, err := expand(data)
		if err != nil {
			return nil, &SourceError{Source: name, URL: redact(lock.URL), Err: err}
		}
		if err := f.store(lock.Digest, data); err != nil {
			return nil, err
		}
		f.files.put(lock.Digest, files)
		return files, nil
	})
	if err != nil {
		return nil, err
	}
	return v.([]*loader.BufferedFile), nil
}

// download fetches lock's archive from its URL (an OCI blob by digest).
func (f *Fetcher) download(ctx context.Context, lock api.ChartLock, creds Credentials) ([]byte, error) {
	name := "chart " + redact(lock.URL)
	switch schemeOf(lock.URL) {
	case "https", "http":
		a, err := authFor(creds, lock.URL)
		if err != nil {
			return nil, &SourceError{Source: name, Err: err}
		}
		resp, err := f.get(ctx, lock.URL, a, f.maxArchiveBytes(), "the archive", nil)
		if err != nil {
			return nil, sourceError(name, "GET", err)
		}
		return resp.body, nil
	case "oci":
		return f.ociBlob(ctx, lock, creds)
	default:
		return nil, &SourceError{Source: name, Err: fmt.Errorf("only https://, http:// and oci:// archives can be fetched")}
	}
}
