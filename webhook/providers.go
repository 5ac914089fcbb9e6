package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"strings"
)

// provider is one git host's dialect: how it signs, names its events and shapes a push.
type provider struct {
	name        string
	eventHeader string
	// deliveryHeader identifies one delivery in the provider's UI; logged so an operator can find it.
	deliveryHeader string
	verify         func(secret []byte, r *http.Request, body []byte) error
	// parse returns the push, or ok=false for an event that never changes a ref.
	parse func(event string, r *http.Request, body []byte) (p Push, ok bool, err error)
	// pong answers events that only test the hook.
	pong map[string]bool
}

var providers = []provider{
	{
		name: "github", eventHeader: "X-GitHub-Event", deliveryHeader: "X-GitHub-Delivery",
		verify: verifyGitHub, parse: parseGitHub, pong: map[string]bool{"ping": true},
	},
	{
		name: "gitlab", eventHeader: "X-Gitlab-Event", deliveryHeader: "X-Gitlab-Event-UUID",
		verify: verifyGitLab, parse: parseGitLab,
	},
}

func detect(r *http.Request) (provider, string, bool) {
	for _, p := range providers {
		if ev := r.Header.Get(p.eventHeader); ev != "" {
			return p, ev, true
		}
	}
	return provider{}, "", false
}

var errUnauthorized = errors.New("unauthorized")

// verifyGitHub checks X-Hub-Signature-256: "sha256=" + hex(HMAC-SHA256(secret, body)).
// The older SHA-1 header is not accepted.
func verifyGitHub(secret []byte, r *http.Request, body []byte) error {
	sig := r.Header.Get("X-Hub-Signature-256")
	if sig == "" {
		return fmt.Errorf("%w: no X-Hub-Signature-256 header", errUnauthorized)
	}
	got, err := hex.DecodeString(strings.TrimPrefix(sig, "sha256="))
	if err != nil || !strings.HasPrefix(sig, "sha256=") {
		return fmt.Errorf("%w: X-Hub-Signature-256 is not sha256=<hex>", errUnauthorized)
	}
	mac := hmac.New(sha256.New, secret)
	mac.Write(body)
	if !hmac.Equal(mac.Sum(nil), got) {
		return fmt.Errorf("%w: X-Hub-Signature-256 does not match the body", errUnauthorized)
	}
	return nil
}

// verifyGitLab checks X-Gitlab-Token, which is the secret itself. Both sides are hashed first so the
// comparison takes the same time whatever their lengths.
func verifyGitLab(secret []byte, r *http.Request, _ []byte) error {
	token := r.Header.Get("X-Gitlab-Token")
	if token == "" {
		return fmt.Errorf("%w: no X-Gitlab-Token header", errUnauthorized)
	}
	want, got := sha256.Sum256(secret), sha256.Sum256([]byte(token))
	if subtle.ConstantTimeCompare(want[:], got[:]) != 1 {
		return fmt.Errorf("%w: X-Gitlab-Token does not match", errUnauthorized)
	}
	return nil
}

type githubPush struct {
	Ref        string `json:"ref"`
	Repository struct {
		CloneURL      string `json:"clone_url"`
		SSHURL        string `json:"ssh_url"`
		HTMLURL       string `json:"html_url"`
		GitURL        string `json:"git_url"`
		DefaultBranch string `json:"default_branch"`
	} `json:"repository"`
}

func parseGitHub(event string, r *http.Request, body []byte) (Push, bool, error) {
	if event != "push" {
		return Push{}, false, nil
	}
	// A hook created with content type application/x-www-form-urlencoded sends the JSON in `payload`.
	if ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); ct == "application/x-www-form-urlencoded" {
		form, err := url.ParseQuery(string(body))
		if err != nil {
			return Push{}, false, fmt.Errorf("GitHub push: form body: %w", err)
		}
		body = []byte(form.Get("payload"))
	}
	var e githubPush
	if err := json.Unmarshal(body, &e); err != nil {
		return Push{}, false, fmt.Errorf("GitHub push: %w", err)
	}
	repo := e.Repository
	return Push{Ref: e.Ref, DefaultBranch: repo.DefaultBranch,
		RepoURLs: []string{repo.CloneURL, repo.SSHURL, repo.HTMLURL, repo.GitURL}}, true, nil
}

type gitlabPush struct {
	Ref     string `json:"ref"`
	Project struct {
		GitHTTPURL    string `json:"git_http_url"`
		GitSSHURL     string `json:"git_ssh_url"`
		WebURL        string `json:"web_url"`
		DefaultBranch string `json:"default_branch"`
	} `json:"project"`
}

func parseGitLab(event string, _ *http.Request, body []byte) (Push, bool, error) {
	// Tag pushes matter to GitRepos pinned to a tag name.
	if event != "Push Hook" && event != "Tag Push Hook" {
		return Push{}, false, nil
	}
	var e gitlabPush
	if err := json.Unmarshal(body, &e); err != nil {
		return Push{}, false, fmt.Errorf("GitLab %s: %w", event, err)
	}
	p := e.Project
	return Push{Ref: e.Ref, DefaultBranch: p.DefaultBranch,
		RepoURLs: []string{p.GitHTTPURL, p.GitSSHURL, p.WebURL}}, true, nil
}
