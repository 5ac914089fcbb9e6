package charts

import (
	"errors"
	"net/http"
	"net/url"
	"strings"
)

// Where credentials go. Helm sends a repository's credentials only to the repository's own scheme, host
// and port (unless --pass-credentials): an index.yaml may list archives on any host, a third-party chart's
// Chart.yaml may name any repository for its dependencies, and a server may redirect anywhere, and none of
// those is where the credentials' owner sent them. Every credential the Fetcher uses is bound to the
// origin of the URL the fleet.yaml named (the repository, the archive, the registry); a URL of another
// origin gets only the TLS settings, which are not secret. The origin travels in the lock
// (api.ChartLock.CredentialsOrigin), so a worker that fetches a locked archive later binds it the same way.

// PassCredentials is implemented by Credentials whose owner allows them on every origin (the GitRepo's
// helmPassCredentials, Helm's --pass-credentials). Plain http:// never gets them.
type PassCredentials interface {
	PassCredentials() bool
}

// originOf is a URL's scheme://host:port, the port made explicit; "" for what does not parse.
func originOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return ""
	}
	scheme := strings.ToLower(u.Scheme)
	port := u.Port()
	if port == "" {
		switch scheme {
		case "https", "oci":
			port = "443"
		case "http":
			port = "80"
		}
	}
	return scheme + "://" + strings.ToLower(u.Hostname()) + ":" + port
}

// boundCreds are creds that reach only origin.
type boundCreds struct {
	creds  Credentials
	origin string
}

// boundTo binds creds to origin; an empty origin lets no credential through (a lock from before origins
// were recorded). Binding only narrows: creds already bound elsewhere reach nothing (a third-party chart's
// dependency in another repository than the chart's).
func boundTo(creds Credentials, origin string) Credentials {
	if creds == nil {
		return nil
	}
	if b, ok := creds.(*boundCreds); ok {
		if b.origin != origin {
			origin = ""
		}
		creds = b.creds
	}
	return &boundCreds{creds: creds, origin: origin}
}

func (b *boundCreds) ForURL(u string) (*Auth, error) {
	a, err := b.creds.ForURL(u)
	if err != nil || a == nil {
		return a, err
	}
	if b.origin != "" && originOf(u) == b.origin {
		return a, nil
	}
	if p, ok := b.creds.(PassCredentials); ok && p.PassCredentials() {
		return a, nil
	}
	return a.withoutSecret(), nil
}

// withoutSecret keeps what verifies the server and drops what identifies the client.
func (a *Auth) withoutSecret() *Auth {
	return &Auth{CABundle: a.CABundle, InsecureSkipTLSVerify: a.InsecureSkipTLSVerify}
}

func (a *Auth) hasSecret() bool { return a != nil && (a.Username != "" || a.Password != "") }

// errPlainHTTP refuses a credential over plain http://, where anyone on the way reads it.
var errPlainHTTP = errors.New("credentials are never sent over plain http://: serve the repository over https://")

// dropAuthOnNewOrigin is the http.Client's redirect policy: a redirect to another scheme, host or port
// goes on without the Authorization header (Go's own policy keeps it across a change of scheme or
// port, and across hosts it deems the same domain), and at most 10 redirects are followed.
func dropAuthOnNewOrigin(req *http.Request, via []*http.Request) error {
	if len(via) >= 10 {
		return errors.New("stopped after 10 redirects")
	}
	if originOf(req.URL.String()) != originOf(via[0].URL.String()) {
		req.Header.Del("Authorization")
	}
	return nil
}
