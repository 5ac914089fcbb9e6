package charts

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/repo"

	"github.com/flotilla-gitops/flotilla/api"
)

// resolveArchive pins helm.chart: https://…/web-1.2.0.tgz. helm.version, when set, must match the
// archive's version: a mismatch is an error rather than a surprise.
func (f *Fetcher) resolveArchive(ctx context.Context, name, url, want string, creds Credentials) (api.ChartLock, error) {
	origin := originOf(url)
	creds = boundTo(creds, origin)
	a, err := authFor(creds, url)
	if err != nil {
		return api.ChartLock{}, &SourceError{Source: name, Err: err}
	}
	digest, err := f.archiveAt(ctx, url, a)
	if err != nil {
		return api.ChartLock{}, sourceError(name, "GET", err)
	}
	files, err := f.archiveFiles(ctx, api.ChartLock{URL: url, Digest: digest, CredentialsOrigin: origin}, creds)
	if err != nil {
		return api.ChartLock{}, err
	}
	c, err := loader.LoadFiles(files)
	if err != nil {
		return api.ChartLock{}, &SourceError{Source: name, URL: url, Err: fmt.Errorf("not a chart archive: %v", err)}
	}
	if want != "" {
		if _, err := pickVersion([]string{c.Metadata.Version}, want); err != nil {
			return api.ChartLock{}, &SourceError{Source: name, URL: url,
				Err: fmt.Errorf("helm.version %q: the archive is version %s", want, c.Metadata.Version)}
		}
	}
	return api.ChartLock{URL: url, Version: c.Metadata.Version, Digest: digest, CredentialsOrigin: origin}, nil
}

// resolveIndex pins helm.repo + helm.chart (+ helm.version) through the repository's index.yaml. When the
// index gives the archive's digest and the cache holds that archive, nothing more is read.
func (f *Fetcher) resolveIndex(ctx context.Context, name, repoURL, chartName, want string, creds Credentials) (api.ChartLock, error) {
	origin := originOf(repoURL)
	creds = boundTo(creds, origin)
	a, err := authFor(creds, repoURL)
	if err != nil {
		return api.ChartLock{}, &SourceError{Source: name, Err: err}
	}
	index, err := f.index(ctx, repoURL, a)
	if err != nil {
		return api.ChartLock{}, sourceError(name, "GET index.yaml", err)
	}
	cv, err := entry(index, chartName, want)
	if err != nil {
		return api.ChartLock{}, &SourceError{Source: name, Op: "chart " + strconv.Quote(chartName), URL: repoURL + "/index.yaml", Err: err}
	}
	archiveURL, err := repo.ResolveReferenceURL(repoURL, cv.URLs[0])
	if err == nil {
		err = checkURL(archiveURL)
	}
	if err != nil {
		return api.ChartLock{}, &SourceError{Source: name, URL: repoURL + "/index.yaml",
			Err: fmt.Errorf("chart %q version %s: URL %s: %v", chartName, cv.Version, redact(cv.URLs[0]), err)}
	}
	lock := api.ChartLock{URL: archiveURL, Version: cv.Version, CredentialsOrigin: origin}
	aa, err := authFor(creds, archiveURL)
	if err != nil {
		return api.ChartLock{}, &SourceError{Source: name, Err: err}
	}
	// The digest an index claims is trusted only once this URL, asked with these credentials, served it:
	// else any index could claim the digest of a chart another GitRepo fetched with its own password.
	if claimed := "sha256:" + strings.ToLower(cv.Digest); cv.Digest != "" && f.servedBefore(archiveURL, aa, claimed) {
		lock.Digest = claimed
		return lock, nil
	}
	if lock.Digest, err = f.archiveAt(ctx, archiveURL, aa); err != nil {
		return api.ChartLock{}, sourceError(name, "GET "+archiveURL, err)
	}
	return lock, nil
}

// servedBefore reports whether this process fetched digest from url with a's credentials, and the cache
// still holds it.
func (f *Fetcher) servedBefore(url string, a *Auth, digest string) bool {
	f.mu.Lock()
	memo := f.archives["archive\x00"+url+"\x00"+a.fingerprint()]
	f.mu.Unlock()
	return memo != nil && memo.digest == digest && f.hasCached(digest)
}

// rememberServed records that url, asked with a's credentials, served digest (see servedBefore).
func (f *Fetcher) rememberServed(url string, a *Auth, digest string) {
	f.mu.Lock()
	f.archives["archive\x00"+url+"\x00"+a.fingerprint()] = &archiveMemo{digest: digest}
	f.mu.Unlock()
}

// archiveAt is the digest of the archive at url, fetched into the cache, or revalidated with a
// conditional GET when this process fetched it before and the cache still holds it.
func (f *Fetcher) archiveAt(ctx context.Context, url string, a *Auth) (string, error) {
	key := "archive\x00" + url + "\x00" + a.fingerprint()
	v, err := f.flight(ctx, key, func(ctx context.Context) (any, error) {
		f.mu.Lock()
		memo := f.archives[key]
		f.mu.Unlock()
		var cond *validators
		if memo != nil && (memo.validators != validators{}) && f.hasCached(memo.digest) {
			cond = &memo.validators
		}
		resp, err := f.get(ctx, url, a, f.maxArchiveBytes(), "the archive", cond)
		if err != nil {
			return nil, err
		}
		if resp.notModified {
			return memo.digest, nil
		}
		digest, err := f.keep(resp.body)
		if err != nil {
			return nil, &requestError{url: redact(url), status: 200, err: err}
		}
		f.mu.Lock()
		f.archives[key] = &archiveMemo{digest: digest, validators: resp.validators}
		f.mu.Unlock()
		return digest, nil
	})
	if err != nil {
		return "", err
	}
	return v.(string), nil
}

// keep checks that data is a chart archive, stores it in the cache and memory, and returns its digest.
func (f *Fetcher) keep(data []byte) (string, error) {
	files, err := expand(data)
	if err != nil {
		return "", err
	}
	digest := digestOf(data)
	if err := f.store(digest, data); err != nil {
		return "", err
	}
	f.files.put(digest, files)
	return digest, nil
}
