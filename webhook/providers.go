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

// provider is one git host's dialect: how it signs, names its events and deliveries, and shapes a push.
type provider struct {
	name        string
	eventHeader string
	// deliveryHeader identifies one delivery in the provider's UI; logged so an operator can find it.
	deliveryHeader string
	// authorize checks what the headers alone can tell, before the body is read: a request that cannot
	// be genuine costs no read.
	authorize func(secret []byte, r *http.Request) error
	// verify checks the body against its signature, when the provider signs it.
	verify func(secret []byte, r *http.Request, body []byte) error
	// replayKeys name a verified delivery across its redeliveries; none when the provider sends no
	// stable identity.
	replayKeys func(r *http.Request, body []byte) []string
	// parse returns the push, or ok=false for an event that never changes a ref.
	parse func(event string, r *http.Request, body []byte) (p Push, ok bool, err error)
	// pong answers events that only test the hook.
	pong map[string]bool
}

var providers = []provider{
	{
		name: "github", eventHeader: "X-GitHub-Event", deliveryHeader: "X-GitHub-Delivery",
		authorize: authorizeGitHub, verify: verifyGitHub, replayKeys: githubReplayKeys,
		parse: parseGitHub, pong: map[string]bool{"ping": true},
	},
	{
		// X-Gitlab-Event-UUID is logged, not used against replays: GitLab gives every event one hook
		// fires while handling one request the same UUID (it exists to detect webhook recursion), so two
		// pushes could share it.
		name: "gitlab", eventHeader: "X-Gitlab-Event", deliveryHeader: "X-Gitlab-Event-UUID",
		authorize: authorizeGitLab, verify: func([]byte, *http.Request, []byte) error { return nil },
		replayKeys: gitlabReplayKeys, parse: parseGitLab,
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

const githubSignature = "X-Hub-Signature-256"

// githubMAC reads X-Hub-Signature-256: "sha256=" + hex(HMAC-SHA256(secret, body)). The older SHA-1
// header is not accepted.
func githubMAC(r *http.Request) ([]byte, error) {
	sig := r.Header.Get(githubSignature)
	if sig == "" {
		return nil, fmt.Errorf("%w: no %s header", errUnauthorized, githubSignature)
	}
	got, err := hex.DecodeString(strings.TrimPrefix(sig, "sha256="))
	if err != nil || !strings.HasPrefix(sig, "sha256=") || len(got) != sha256.Size {
		return nil, fmt.Errorf("%w: %s is not sha256=<64 hex digits>", errUnauthorized, githubSignature)
	}
	return got, nil
}

func authorizeGitHub(_ []byte, r *http.Request) error {
	_, err := githubMAC(r)
	return err
}

func verifyGitHub(secret []byte, r *http.Request, body []byte) error {
	got, err := githubMAC(r)
	if err != nil {
		return err
	}
	mac := hmac.New(sha256.New, secret)
	mac.Write(body)
	if !hmac.Equal(mac.Sum(nil), got) {
		return fmt.Errorf("%w: %s does not match the body", errUnauthorized, githubSignature)
	}
	return nil
}

// authorizeGitLab checks X-Gitlab-Token, which is the secret itself. Both sides are hashed first so the
// comparison takes the same time whatever their lengths.
func authorizeGitLab(secret []byte, r *http.Request) error {
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

// githubReplayKeys are the delivery GUID, which a redelivery keeps, and the digest of the signed body:
// GitHub does not sign X-GitHub-Delivery, so a captured delivery replayed under a fresh GUID is still
// recognised. A genuine push never repeats a body: it carries the push time (repository.pushed_at).
func githubReplayKeys(r *http.Request, body []byte) []string {
	keys := []string{replayKey("github body", body)}
	if id := r.Header.Get("X-GitHub-Delivery"); id != "" {
		keys = append(keys, replayKey("github delivery", []byte(id)))
	}
	return keys
}

// gitlabReplayKeys is GitLab's Idempotency-Key (sent by recent versions), one per delivery and kept by its
// automatic and manual retries. X-Gitlab-Webhook-UUID changes with every attempt. A body digest would
// add nothing: whoever holds the token can send any body.
func gitlabReplayKeys(r *http.Request, _ []byte) []string {
	if id := r.Header.Get("Idempotency-Key"); id != "" {
		return []string{replayKey("gitlab idempotency-key", []byte(id))}
	}
	return nil
}

// replayKey is a fixed-size key, whatever the length of the value a sender chose.
func replayKey(kind string, value []byte) string {
	h := sha256.New()
	h.Write([]byte(kind))
	h.Write([]byte{0})
	h.Write(value)
	return string(h.Sum(nil))
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
