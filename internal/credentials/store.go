// Package credentials is the worker's store of named credentials: what a GitRepo's clientSecretName (git)
// and helmSecretName (Helm repositories) resolve to. It is read from the worker's own disk, a YAML file or
// a folder laid out like mounted Kubernetes Secrets, so that only names ever travel through Temporal. It is
// read once, at start: a change needs a restart.
package credentials

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"slices"
	"sort"
	"strings"

	"github.com/flotilla-gitops/flotilla/fleet"
)

// ErrNoCredentials is every Get of a nil Store: the worker was started without --credentials.
var ErrNoCredentials = errors.New("the worker has no credentials configured (--credentials)")

// UnknownSecretError is a Get of a name the store does not hold.
type UnknownSecretError struct {
	// Name is the secret asked for; Source is where the store was loaded from.
	Name, Source string
}

func (e *UnknownSecretError) Error() string {
	return fmt.Sprintf("secret %q is not in the worker's credentials (loaded from %s)", e.Name, e.Source)
}

// Store holds secrets by name. A nil *Store is usable: it holds none, and every Get says so.
type Store struct {
	source  string
	secrets map[string]*Secret
}

// Load reads a store from path: a YAML file mapping each secret's name to its keys, or a folder holding
// one folder per secret with one file per key (Fleet's key names, as a Kubernetes Secret is mounted).
// Every secret is checked; an error names the path, the secret and the key, never a value.
func Load(path string) (*Store, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("credentials: %w", err)
	}
	var secrets map[string]*Secret
	if info.IsDir() {
		secrets, err = readFolder(path)
	} else {
		secrets, err = readFile(path)
	}
	if err != nil {
		return nil, err
	}
	return &Store{source: path, secrets: secrets}, nil
}

// LoadFlags loads the store that --credentials (path) names, or --git-credentials (legacy), the older
// name of its file form; with neither it returns a nil Store. Both set to different paths is an error.
func LoadFlags(path, legacy string) (*Store, error) {
	switch {
	case path != "" && legacy != "" && path != legacy:
		return nil, errors.New("--credentials and --git-credentials (or FLOTILLA_CREDENTIALS and FLOTILLA_GIT_CREDENTIALS) name different paths; " +
			"--git-credentials is the older name of --credentials FILE: give one")
	case path != "":
		return Load(path)
	case legacy != "":
		if info, err := os.Stat(legacy); err == nil && info.IsDir() {
			return nil, fmt.Errorf("--git-credentials %s: a folder; --git-credentials takes a file, --credentials takes both", legacy)
		}
		return Load(legacy)
	}
	return nil, nil
}

// NotGivenError is a secret named by a GitRepo of a workspace the secret is not given to, or for a URL
// outside its URL prefixes.
type NotGivenError struct {
	Name, Workspace, URL, Source string
	// Workspaces or URLPrefixes are the secret's, whichever refused.
	Workspaces, URLPrefixes []string
}

func (e *NotGivenError) Error() string {
	if e.URLPrefixes != nil {
		return fmt.Sprintf("secret %q is only sent to URLs under %s, and %s is not one (urlPrefixes in %s)",
			e.Name, strings.Join(e.URLPrefixes, ", "), redactURL(e.URL), e.Source)
	}
	return fmt.Sprintf("secret %q is not given to workspace %q: a GitRepo uses only the secrets of its own workspace "+
		"(this one's workspaces: %s); list %q in the secret's workspaces in %s", e.Name, e.Workspace,
		strings.Join(orDefault(e.Workspaces), ", "), e.Workspace, e.Source)
}

// redactURL cuts what a URL may carry of a secret: user info, query, fragment.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" {
		if at := strings.LastIndexByte(raw, '@'); at >= 0 && strings.Contains(raw[:at], ":") {
			return raw[at+1:]
		}
		return raw
	}
	u.User, u.RawQuery, u.Fragment = nil, "", ""
	return u.String()
}

func orDefault(ws []string) []string {
	if len(ws) == 0 {
		return []string{fleet.DefaultNamespace}
	}
	return ws
}

// For returns a copy of the secret name as a GitRepo of workspace may use it to reach url: only a secret
// given to the workspace (Secret.Workspaces), and only for a URL under its prefixes when it has some. Its
// errors name the secret, the workspace or URL, and where the store came from, never a value.
func (s *Store) For(workspace, name, url string) (*Secret, error) {
	if s == nil {
		return nil, fmt.Errorf("secret %q: %w", name, ErrNoCredentials)
	}
	sec, ok := s.secrets[name]
	if !ok {
		return nil, &UnknownSecretError{Name: name, Source: s.source}
	}
	workspace = fleet.Workspace(workspace)
	if !slices.Contains(orDefault(sec.Workspaces), workspace) && !slices.Contains(sec.Workspaces, "*") {
		return nil, &NotGivenError{Name: name, Workspace: workspace, Source: s.source, Workspaces: sec.Workspaces}
	}
	if len(sec.URLPrefixes) > 0 && !slices.ContainsFunc(sec.URLPrefixes, func(p string) bool { return strings.HasPrefix(url, p) }) {
		return nil, &NotGivenError{Name: name, URL: url, Source: s.source, URLPrefixes: sec.URLPrefixes}
	}
	return sec.clone(), nil
}

// Names lists the secrets held, sorted.
func (s *Store) Names() []string {
	if s == nil {
		return nil
	}
	names := make([]string, 0, len(s.secrets))
	for n := range s.secrets {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Source is the file or folder the store was loaded from, empty for a nil Store.
func (s *Store) Source() string {
	if s == nil {
		return ""
	}
	return s.source
}

// String names the source and the secrets, never a value.
func (s *Store) String() string {
	if s == nil {
		return "credentials.Store{}"
	}
	return fmt.Sprintf("credentials.Store{%s: %s}", s.source, strings.Join(s.Names(), " "))
}

// GoString is String.
func (s *Store) GoString() string { return s.String() }

// Format prints String for every verb.
func (s *Store) Format(f fmt.State, verb rune) {
	if verb == 'q' {
		fmt.Fprintf(f, "%q", s.String())
		return
	}
	fmt.Fprint(f, s.String())
}
