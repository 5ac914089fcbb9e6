// Package chartload is render's ChartLoader on a worker or the CLI: remote charts and Chart.yaml
// dependencies through the digest-verified chart cache (internal/charts), pinned by the locks of a plan,
// with the credentials a GitRepo names sent only where its helmRepoURLRegex allows.
package chartload

import (
	"context"
	"errors"
	"fmt"
	"path"
	"regexp"

	"helm.sh/helm/v3/pkg/chart"

	"github.com/flotilla-gitops/flotilla/api"
	"github.com/flotilla-gitops/flotilla/fleet"
	"github.com/flotilla-gitops/flotilla/internal/charts"
	"github.com/flotilla-gitops/flotilla/internal/credentials"
	"github.com/flotilla-gitops/flotilla/render"
)

// Secrets resolves a GitRepo's helmSecretName on the worker's side only (its credentials store):
// credentials never travel through Temporal.
type Secrets interface {
	// For is the secret name as a GitRepo of workspace may use it for url (credentials.Store.For).
	For(workspace, name, url string) (*credentials.Secret, error)
}

// TLS is a GitRepo's caBundle and insecureSkipTLSVerify, which apply to its charts as to its repository.
type TLS struct {
	CABundle              []byte
	InsecureSkipTLSVerify bool
}

// Loader loads one GitRepo's charts within one activity or command.
type Loader struct {
	ctx     context.Context
	fetcher *charts.Fetcher
	creds   charts.Credentials
}

// New is the loader of a GitRepo of workspace whose chart access is access (nil: anonymous) and whose TLS
// settings are tls; secrets may be nil when the worker has none.
func New(ctx context.Context, f *charts.Fetcher, workspace string, access *api.ChartAccess, tls TLS, secrets Secrets) *Loader {
	var a api.ChartAccess
	if access != nil {
		a = *access
	}
	return &Loader{ctx: ctx, fetcher: f, creds: &gitRepoCreds{workspace: workspace, access: a, tls: tls, secrets: secrets}}
}

// DepsSource is the lock key of the fetched dependencies of the repository chart in dir.
func DepsSource(dir string) string { return "dependencies of " + dir }

// Remote loads the remote chart h names, pinned by its lock among locks, else resolved now.
func (l *Loader) Remote(h *fleet.HelmOptions, locks []api.ChartLock) (*chart.Chart, api.ChartLock, error) {
	lock, ok := find(locks, charts.SourceOf(h).Key())
	if !ok {
		var err error
		if lock, err = l.Resolve(h); err != nil {
			return nil, api.ChartLock{}, err
		}
	}
	if lock.Error != "" {
		return nil, lock, errors.New(lock.Error)
	}
	c, err := l.fetcher.Load(l.ctx, lock, l.creds)
	return c, lock, err
}

// Resolve resolves the remote chart h names to its newest matching version.
func (l *Loader) Resolve(h *fleet.HelmOptions) (api.ChartLock, error) {
	return l.fetcher.Resolve(l.ctx, charts.SourceOf(h), l.creds, charts.ResolveOptions{DisableDependencyUpdate: h.DisableDependencyUpdate})
}

// Dependencies adds the unvendored Chart.yaml dependencies of the repository chart in dir, pinned by their
// lock among locks, else resolved now. A file:// dependency is read from the checkout, never outside it.
func (l *Loader) Dependencies(c *chart.Chart, root, dir string, h *fleet.HelmOptions, locks []api.ChartLock) (*api.ChartLock, error) {
	lock, ok := find(locks, DepsSource(dir))
	if !ok {
		var err error
		if lock, err = l.LockDependencies(c, root, dir); err != nil {
			return nil, err
		}
	}
	if lock.Error != "" {
		return nil, errors.New(lock.Error)
	}
	if err := l.fetcher.AddDependencies(l.ctx, c, lock.Dependencies, l.creds, fileDependency(root, dir)); err != nil {
		return nil, err
	}
	return &lock, nil
}

// LockDependencies resolves the unvendored Chart.yaml dependencies of the repository chart in dir, as a
// plan pins them, without loading them into c.
func (l *Loader) LockDependencies(c *chart.Chart, root, dir string) (api.ChartLock, error) {
	deps, err := l.fetcher.LockDependencies(l.ctx, c, l.creds, fileDependency(root, dir))
	if err != nil {
		return api.ChartLock{}, err
	}
	return api.ChartLock{Source: DepsSource(dir), Dependencies: deps}, nil
}

// fileDependency reads a file:// dependency of the chart in dir from the checkout at root, never outside it.
func fileDependency(root, dir string) charts.FileDependency {
	return func(p string) (*chart.Chart, error) { return render.LoadRepoChart(root, path.Join(dir, p)) }
}

func find(locks []api.ChartLock, source string) (api.ChartLock, bool) {
	for _, l := range locks {
		if l.Source == source {
			return l, true
		}
	}
	return api.ChartLock{}, false
}

type gitRepoCreds struct {
	workspace string
	access    api.ChartAccess
	tls       TLS
	secrets   Secrets
}

// PassCredentials is the GitRepo's helmPassCredentials (charts.PassCredentials).
func (g *gitRepoCreds) PassCredentials() bool { return g.access.PassCredentials }

// ForURL applies helmSecretName and helmRepoURLRegex: the secret goes to the URLs the regex matches (every
// URL without one), and nothing to any other. The GitRepo's TLS settings apply to every URL.
func (g *gitRepoCreds) ForURL(url string) (*charts.Auth, error) {
	auth := &charts.Auth{CABundle: g.tls.CABundle, InsecureSkipTLSVerify: g.tls.InsecureSkipTLSVerify}
	if g.access.SecretName == "" {
		return auth, nil
	}
	if g.access.URLRegex != "" {
		re, err := regexp.Compile(g.access.URLRegex)
		if err != nil {
			return nil, fmt.Errorf("helmRepoURLRegex %q: %v", g.access.URLRegex, err)
		}
		if !re.MatchString(url) {
			return auth, nil
		}
	}
	if g.secrets == nil {
		return nil, fmt.Errorf("helmSecretName %q: %w", g.access.SecretName, credentials.ErrNoCredentials)
	}
	secret, err := g.secrets.For(g.workspace, g.access.SecretName, url)
	if err != nil {
		return nil, fmt.Errorf("helmSecretName: %w", err)
	}
	auth.Username, auth.Password = string(secret.Username), string(secret.Password)
	if len(secret.CABundle) > 0 {
		auth.CABundle = append(append(append([]byte(nil), auth.CABundle...), '\n'), secret.CABundle...)
	}
	auth.InsecureSkipTLSVerify = auth.InsecureSkipTLSVerify || secret.InsecureSkipTLSVerify
	return auth, nil
}
