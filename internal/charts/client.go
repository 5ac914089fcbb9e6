package charts

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"
)

// Auth is what the worker's credentials store gives for one URL; the caller has already applied the
// GitRepo's helmSecretName and helmRepoURLRegex.
type Auth struct {
	Username, Password string
	// CABundle is added to the system's roots to verify the server.
	CABundle              []byte
	InsecureSkipTLSVerify bool
}

// Credentials gives the Auth for a URL, or nil for anonymous access. ForURL receives the URL about to be
// requested: a repository's URL (for its index.yaml), an archive's URL, or oci://registry/path/chart.
type Credentials interface {
	ForURL(url string) (*Auth, error)
}

// authFor asks creds for url's Auth; a nil creds is anonymous.
func authFor(creds Credentials, url string) (*Auth, error) {
	if creds == nil {
		return nil, nil
	}
	a, err := creds.ForURL(url)
	if err != nil {
		return nil, fmt.Errorf("credentials: %w", err)
	}
	return a, nil
}

// fingerprint tells Auths apart in the Fetcher's memory (a memo of one repository read with one
// password is not served to a caller with another). It is a hash, and never leaves the process.
func (a *Auth) fingerprint() string {
	if a == nil {
		return "anonymous"
	}
	h := sha256.New()
	for _, s := range []string{a.Username, a.Password, string(a.CABundle), fmt.Sprint(a.InsecureSkipTLSVerify)} {
		fmt.Fprintf(h, "%d:%s;", len(s), s)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// tlsKey identifies the transport an Auth needs: its connections (and their TLS sessions) are shared by
// every request with the same trust settings.
func (a *Auth) tlsKey() string {
	if a == nil || (len(a.CABundle) == 0 && !a.InsecureSkipTLSVerify) {
		return "system"
	}
	sum := sha256.Sum256(a.CABundle)
	return fmt.Sprintf("%x/%t", sum, a.InsecureSkipTLSVerify)
}

func (f *Fetcher) httpClient(a *Auth) (*http.Client, error) {
	key := a.tlsKey()
	f.mu.Lock()
	defer f.mu.Unlock()
	if c, ok := f.clients[key]; ok {
		return c, nil
	}
	t := http.DefaultTransport.(*http.Transport).Clone()
	dialer := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second, Control: dialControl(f.AllowNetworks, f.AllowEveryNetwork)}
	t.DialContext = dialer.DialContext
	t.Proxy = nil // the policy is on the address dialled: a proxy would dial for us, unchecked
	t.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12}
	if a != nil {
		t.TLSClientConfig.InsecureSkipVerify = a.InsecureSkipTLSVerify //nolint:gosec // the user asked for it (insecureSkipTLSVerify)
		if len(a.CABundle) > 0 {
			pool, err := x509.SystemCertPool()
			if err != nil {
				pool = x509.NewCertPool()
			}
			if !pool.AppendCertsFromPEM(a.CABundle) {
				return nil, errors.New("credentials: the CA bundle holds no PEM certificate")
			}
			t.TLSClientConfig.RootCAs = pool
		}
	}
	// Every request has its own deadline (Fetcher.Timeout); these only bound the steps before it.
	t.TLSHandshakeTimeout = 10 * time.Second
	t.ResponseHeaderTimeout = f.timeout()
	c := &http.Client{Transport: t, CheckRedirect: dropAuthOnNewOrigin}
	f.clients[key] = c
	return c, nil
}

// validators are what a server said about a body, to revalidate it with a conditional GET.
type validators struct{ etag, lastModified string }

// response is the outcome of get: a body, or notModified when the validators still hold.
type response struct {
	body        []byte
	notModified bool
	validators  validators
}

// get reads url with basic auth, a deadline, and at most limit bytes (what names the body in an error:
// "index.yaml", "the archive"). With validators, an unchanged body answers notModified.
func (f *Fetcher) get(ctx context.Context, url string, a *Auth, limit int64, what string, cond *validators) (response, error) {
	client, err := f.httpClient(a)
	if err != nil {
		return response{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, f.timeout())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return response{}, &requestError{url: redact(url), err: errors.New("not a valid URL")}
	}
	if a.hasSecret() {
		if req.URL.Scheme != "https" {
			return response{}, &requestError{url: redact(url), err: errPlainHTTP}
		}
		req.SetBasicAuth(a.Username, a.Password)
	}
	if cond != nil {
		if cond.etag != "" {
			req.Header.Set("If-None-Match", cond.etag)
		}
		if cond.lastModified != "" {
			req.Header.Set("If-Modified-Since", cond.lastModified)
		}
	}
	resp, err := client.Do(req)
	if err != nil {
		return response{}, &requestError{url: redact(url), err: transportError(err)}
	}
	defer resp.Body.Close()
	v := validators{etag: resp.Header.Get("ETag"), lastModified: resp.Header.Get("Last-Modified")}
	if resp.StatusCode == http.StatusNotModified && cond != nil {
		return response{notModified: true, validators: v}, nil
	}
	if resp.StatusCode != http.StatusOK {
		return response{}, &requestError{url: redact(url), status: resp.StatusCode, err: &statusError{resp.StatusCode}}
	}
	tooBig := &requestError{url: redact(url), status: resp.StatusCode,
		err: fmt.Errorf("%s is larger than %s, the most Flotilla reads", what, mib(limit))}
	if resp.ContentLength > limit {
		return response{}, tooBig
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return response{}, &requestError{url: redact(url), status: resp.StatusCode, err: transportError(err)}
	}
	if int64(len(body)) > limit {
		return response{}, tooBig
	}
	return response{body: body, validators: v}, nil
}

func mib(n int64) string {
	if n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}
