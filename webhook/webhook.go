// Package webhook receives GitHub and GitLab push events and syncs, at once, every running GitRepo that
// follows the pushed ref of the pushed repository. Polling stays the safety net: a lost delivery only
// delays a commit until the next poll.
package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sort"
	"strconv"
	"time"

	"go.uber.org/zap"

	"github.com/flotilla-gitops/flotilla/api"
)

// Path is where the worker serves the webhook, for both providers.
const Path = "/webhooks/git"

// syncBudget bounds the work done for one delivery; GitHub gives up on a delivery after 10 s.
const syncBudget = 9 * time.Second

// ErrNotRunning is returned by GitRepos.Sync for a GitRepo that ended since it was listed.
var ErrNotRunning = errors.New("gitrepo is not running")

// GitRepos is the webhook's view of the running GitRepos.
type GitRepos interface {
	// List returns the running GitRepos of every workspace whose repo URL satisfies matches, with the
	// branch and revision they follow: a push concerns every GitRepo of the repository, whatever its
	// namespace.
	List(ctx context.Context, matches func(repo string) bool) ([]GitRepo, error)
	// Sync asks one GitRepo to poll now.
	Sync(ctx context.Context, gitRepo api.GitRepoKey) error
}

// Handler verifies, parses and acts on push events. It never logs the secret or the payload.
type Handler struct {
	secret []byte
	repos  GitRepos
	log    *zap.Logger
	limits Limits
	// slots holds one token per delivery in flight.
	slots chan struct{}
	// bySource counts the slots each remote address holds (Limits.MaxPerSource).
	bySource sources
	seen     *deliveries
}

// New returns a handler; the secret is required, since an unauthenticated hook lets anyone trigger polls.
// Zero limits take the defaults.
func New(secret []byte, repos GitRepos, limits Limits, log *zap.Logger) (*Handler, error) {
	if len(secret) == 0 {
		return nil, errors.New("webhook: the secret is empty")
	}
	limits, err := limits.withDefaults()
	if err != nil {
		return nil, err
	}
	if log == nil {
		log = zap.NewNop()
	}
	return &Handler{secret: append([]byte(nil), secret...), repos: repos, log: log, limits: limits,
		slots: make(chan struct{}, limits.MaxInFlight), seen: newDeliveries(time.Now)}, nil
}

// Response is the JSON body of every answer.
type Response struct {
	// Synced names the GitRepos asked to poll, sorted: by name in fleet-default, as namespace/name in any
	// other workspace (api.GitRepoKey.String).
	Synced []string `json:"synced"`
	// Failed names the GitRepos that could not be signalled; the delivery can be redelivered.
	Failed []string `json:"failed,omitempty"`
	// Duplicate is set when this delivery was handled before and nothing was synced again.
	Duplicate bool   `json:"duplicate,omitempty"`
	Message   string `json:"message,omitempty"`
}

// ServeHTTP spends on a delivery only what it has earned: the declared size, the headers' authentication
// and the in-flight limit are checked before anything is read, the body's signature before it is parsed,
// and a delivery handled before is answered without syncing again.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		reply(w, http.StatusMethodNotAllowed, Response{Message: "only POST"})
		return
	}
	p, event, ok := detect(r)
	if !ok {
		reply(w, http.StatusBadRequest, Response{Message: "not a GitHub (X-GitHub-Event) or GitLab (X-Gitlab-Event) webhook"})
		return
	}
	log := h.log.With(zap.String("provider", p.name), zap.String("event", clip(event)),
		zap.String("delivery", clip(r.Header.Get(p.deliveryHeader))), zap.String("remote", r.RemoteAddr))
	if r.ContentLength > h.limits.MaxBody {
		h.tooLarge(w, log, r.ContentLength)
		return
	}
	if err := p.authorize(h.secret, r); err != nil {
		log.Warn("webhook rejected", zap.Error(err))
		reply(w, http.StatusUnauthorized, Response{Message: err.Error()})
		return
	}
	release, ok := h.bySource.take(r.RemoteAddr, h.limits.MaxPerSource)
	if !ok {
		log.Warn("webhook busy for this source", zap.Int("maxPerSource", h.limits.MaxPerSource))
		w.Header().Set("Retry-After", strconv.Itoa(int(busyRetryAfter/time.Second)))
		reply(w, http.StatusServiceUnavailable, Response{Synced: []string{},
			Message: fmt.Sprintf("busy: %d deliveries from this address are being handled; retry later", h.limits.MaxPerSource)})
		return
	}
	defer release()
	select {
	case h.slots <- struct{}{}:
		defer func() { <-h.slots }()
	default:
		log.Warn("webhook busy", zap.Int("maxInFlight", h.limits.MaxInFlight))
		w.Header().Set("Retry-After", strconv.Itoa(int(busyRetryAfter/time.Second)))
		reply(w, http.StatusServiceUnavailable, Response{Synced: []string{},
			Message: fmt.Sprintf("busy: %d deliveries are being handled; retry later", h.limits.MaxInFlight)})
		return
	}
	// The body must arrive promptly: a slot held by a body that trickles in is a slot a push waits for.
	// (A handler served without a connection, as in tests, has no deadline to set.)
	_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(h.limits.BodyDeadline))
	body, err := readBody(w, r, h.limits.MaxBody)
	if err != nil {
		if errors.As(err, new(errTooLarge)) {
			h.tooLarge(w, log, -1)
			return
		}
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			log.Warn("webhook body too slow", zap.Duration("deadline", h.limits.BodyDeadline))
			reply(w, http.StatusRequestTimeout, Response{Message: fmt.Sprintf("the body did not arrive within %s", h.limits.BodyDeadline)})
			return
		}
		reply(w, http.StatusBadRequest, Response{Message: "reading the body failed"})
		return
	}
	if err := p.verify(h.secret, r, body); err != nil {
		log.Warn("webhook rejected", zap.Error(err))
		reply(w, http.StatusUnauthorized, Response{Message: err.Error()})
		return
	}
	if p.pong[event] {
		reply(w, http.StatusOK, Response{Synced: []string{}, Message: "pong"})
		return
	}
	push, ok, err := p.parse(event, r, body)
	if err != nil {
		log.Warn("webhook payload invalid", zap.Error(err))
		reply(w, http.StatusBadRequest, Response{Message: err.Error()})
		return
	}
	if !ok {
		reply(w, http.StatusAccepted, Response{Synced: []string{}, Message: fmt.Sprintf("ignored: %s event %q is not a push", p.name, clip(event))})
		return
	}
	urls := newRepoSet(push.RepoURLs)
	if push.Ref == "" || len(urls) == 0 {
		reply(w, http.StatusBadRequest, Response{Message: "push without a ref or a repository URL"})
		return
	}
	log = log.With(zap.String("repo", urls.any()), zap.String("ref", clip(push.Ref)))
	h.handlePush(w, r, log, push, urls, p.replayKeys(r, body))
}

// handlePush syncs a verified push unless it was handled before. Only a delivery that signalled every
// GitRepo it matched, and at least one, is remembered: one that failed must run again when redelivered,
// and one that matched nothing may match a GitRepo started since.
func (h *Handler) handlePush(w http.ResponseWriter, r *http.Request, log *zap.Logger, push Push, urls repoSet, keys []string) {
	switch h.seen.admit(keys) {
	case duplicate:
		// 200, not 409: the delivery's effect took place, and a provider counts an error answer as a
		// failed delivery (GitLab disables a hook that keeps failing).
		log.Info("webhook duplicate delivery ignored")
		reply(w, http.StatusOK, Response{Synced: []string{}, Duplicate: true,
			Message: "delivery already handled; nothing synced again"})
		return
	case inProgress:
		log.Info("webhook delivery already in progress")
		reply(w, http.StatusConflict, Response{Synced: []string{},
			Message: "the same delivery is being handled now; its answer is the one that counts"})
		return
	}
	handled := false
	defer func() { h.seen.done(keys, handled) }()

	ctx, cancel := context.WithTimeout(r.Context(), syncBudget)
	defer cancel()
	res, err := h.sync(ctx, log, push, urls)
	if err != nil {
		log.Error("webhook could not list GitRepos", zap.Error(err))
		reply(w, http.StatusServiceUnavailable, Response{Synced: []string{}, Message: "listing GitRepos failed"})
		return
	}
	code := http.StatusOK
	if len(res.Failed) > 0 {
		code = http.StatusBadGateway
		res.Message = "some GitRepos could not be signalled; redeliver to retry"
	}
	handled = code == http.StatusOK && len(res.Synced) > 0
	log.Info("webhook push handled", zap.Strings("synced", res.Synced), zap.Strings("failed", res.Failed))
	reply(w, code, res)
}

func (h *Handler) tooLarge(w http.ResponseWriter, log *zap.Logger, declared int64) {
	err := errTooLarge{h.limits.MaxBody}
	log.Warn("webhook payload too large", zap.Int64("limit", h.limits.MaxBody), zap.Int64("contentLength", declared))
	reply(w, http.StatusRequestEntityTooLarge, Response{Synced: []string{}, Message: err.Error()})
}

func (h *Handler) sync(ctx context.Context, log *zap.Logger, push Push, urls repoSet) (Response, error) {
	res := Response{Synced: []string{}}
	repos, err := h.repos.List(ctx, urls.matches)
	if err != nil {
		return res, err
	}
	for _, g := range repos {
		if !urls.matches(g.Repo) || !g.Follows(push.Ref, push.DefaultBranch) {
			continue
		}
		key := g.Key()
		switch err := h.repos.Sync(ctx, key); {
		case err == nil:
			res.Synced = append(res.Synced, key.String())
		case errors.Is(err, ErrNotRunning):
		default:
			log.Warn("webhook could not signal sync", zap.Stringer("gitRepo", key), zap.Error(err))
			res.Failed = append(res.Failed, key.String())
		}
	}
	sort.Strings(res.Synced)
	sort.Strings(res.Failed)
	return res, nil
}

func reply(w http.ResponseWriter, code int, r Response) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(r)
}

// clip bounds header values echoed into logs and answers: they are not covered by the signature.
func clip(s string) string {
	if len(s) > 100 {
		return s[:100] + "…"
	}
	return s
}
