package temporalconn

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"
	"google.golang.org/grpc/codes"
)

// What went wrong when Dial fails, for errors.Is: a caller may retry ErrUnreachable later, the others
// need someone to change a setting.
var (
	ErrUnreachable       = errors.New("temporal unreachable")
	ErrTLS               = errors.New("TLS handshake failed")
	ErrUnauthenticated   = errors.New("temporal refused the credentials")
	ErrPermissionDenied  = errors.New("temporal denied access")
	ErrNamespaceNotFound = errors.New("temporal namespace not found")
)

// dialError's message is the sentence for the operator; Is and Unwrap keep the kind and the cause.
type dialError struct {
	kind error
	msg  string
	err  error
}

func (e *dialError) Error() string   { return e.msg }
func (e *dialError) Unwrap() []error { return []error{e.kind, e.err} }

// Backoff between attempts: quick at first, for a frontend that is still starting beside us, then
// capped, so the log gets a line every few seconds and not a flood.
const (
	firstRetryDelay = 500 * time.Millisecond
	maxRetryDelay   = 8 * time.Second
)

// Dial connects as s says and checks that the namespace answers, retrying with backoff while the server
// cannot be reached, up to s.ConnectTimeout. Anything else (a certificate refused, a key rejected, a
// namespace missing) will not mend by waiting and fails at once. The error says which, naming the
// setting to fix; errors.Is tells the kinds apart.
func Dial(ctx context.Context, s Settings, logger log.Logger) (client.Client, error) {
	opts, err := s.ClientOptions(logger)
	if err != nil {
		return nil, err
	}
	budget := s.ConnectTimeout
	if budget <= 0 {
		budget = DefaultConnectTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, budget)
	defer cancel()
	start := time.Now()
	delay := firstRetryDelay
	// telling is the last error that says more than "deadline exceeded", which is all an attempt cut short
	// by the budget reports: the operator wants to see "connection refused" or what the server answered.
	var telling error
	for attempt := 1; ; attempt++ {
		c, err := dialOnce(ctx, opts)
		if err == nil {
			return c, nil
		}
		derr := explain(s, err)
		if errors.Is(derr, ErrUnreachable) {
			if conf := opts.ConnectionOptions.TLS; conf != nil {
				if perr := probeTLS(ctx, s.Address, conf); perr != nil {
					derr = explain(s, perr)
				}
			} else if speaksTLS(ctx, s.Address) {
				derr = &dialError{kind: ErrTLS, err: err, msg: fmt.Sprintf("Temporal at %s speaks TLS and we spoke plain gRPC: give --tls (env %s), and --tls-ca-file if a private CA signed its certificate",
					s.Address, EnvTLS)}
			}
		}
		if !errors.Is(derr, ErrUnreachable) {
			return nil, derr
		}
		if telling == nil || !cutShort(err) {
			telling = err
		}
		err = telling
		wait := min(delay, time.Until(deadline(ctx)))
		if wait <= 0 || ctx.Err() != nil {
			return nil, unreachable(s, err, attempt, time.Since(start))
		}
		if logger != nil {
			logger.Warn("Temporal not reachable yet; retrying", "address", s.Address, "attempt", attempt, "retryIn", wait.String(), "error", err.Error())
		}
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return nil, unreachable(s, err, attempt, time.Since(start))
		}
		delay = min(2*delay, maxRetryDelay)
	}
}

// cutShort is an attempt ended by the budget; the SDK wraps the context's error in text only.
func cutShort(err error) bool {
	return errors.Is(err, context.DeadlineExceeded) || strings.HasSuffix(err.Error(), context.DeadlineExceeded.Error())
}

func deadline(ctx context.Context) time.Time {
	d, _ := ctx.Deadline()
	return d
}

// dialOnce dials and asks for the namespace: the SDK's dial only calls GetSystemInfo, which a server
// may answer without looking at the API key, so a bad key or a namespace the certificate may not use
// would otherwise surface on the first workflow call, far from its cause.
func dialOnce(ctx context.Context, opts client.Options) (client.Client, error) {
	c, err := client.DialContext(ctx, opts)
	if err != nil {
		return nil, err
	}
	if opts.Namespace != "" {
		_, err = c.WorkflowService().DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: opts.Namespace})
		var unimpl *serviceerror.Unimplemented
		if err != nil && !errors.As(err, &unimpl) {
			c.Close()
			return nil, err
		}
	}
	return c, nil
}

func unreachable(s Settings, err error, attempts int, took time.Duration) error {
	msg := fmt.Sprintf("Temporal at %s is not reachable (%d attempts in %s): %v; check --address (env TEMPORAL_ADDRESS)",
		s.Address, attempts, took.Round(100*time.Millisecond), err)
	if hint := plainOrTLSHint(s, err); hint != "" {
		msg += hint
	}
	return &dialError{kind: ErrUnreachable, msg: msg, err: err}
}

// explain sorts err into one of the kinds above. gRPC reports a failed handshake as Unavailable with
// the TLS error as text, so the text decides between a TLS fault and a server that is not there.
func explain(s Settings, err error) error {
	text := err.Error()
	if tlsFault(text) {
		return &dialError{kind: ErrTLS, msg: fmt.Sprintf("TLS handshake with Temporal at %s failed: %s; %s", s.Address, tlsCause(text), tlsHint(s, text)), err: err}
	}
	switch serviceerror.ToStatus(err).Code() {
	case codes.Unauthenticated:
		return &dialError{kind: ErrUnauthenticated, msg: fmt.Sprintf("Temporal at %s refused our credentials: %v; %s", s.Address, err, credentialHint(s)), err: err}
	case codes.PermissionDenied:
		if hint, expired := expiredKeyHint(s, time.Now()); expired {
			return &dialError{kind: ErrUnauthenticated, msg: fmt.Sprintf("Temporal at %s refused our credentials: %v; %s", s.Address, err, hint), err: err}
		}
		return &dialError{kind: ErrPermissionDenied, msg: fmt.Sprintf("Temporal at %s denied access to namespace %q: %v; check that %s may use it, or --temporal-namespace (env TEMPORAL_NAMESPACE)",
			s.Address, s.Namespace, err, credentialName(s)), err: err}
	case codes.NotFound:
		var nf *serviceerror.NamespaceNotFound
		if errors.As(err, &nf) || strings.Contains(strings.ToLower(text), "namespace") {
			return &dialError{kind: ErrNamespaceNotFound, msg: fmt.Sprintf("Temporal at %s has no namespace %q: check --temporal-namespace (env TEMPORAL_NAMESPACE)", s.Address, s.Namespace), err: err}
		}
	case codes.Unavailable, codes.DeadlineExceeded, codes.Canceled:
		return &dialError{kind: ErrUnreachable, msg: text, err: err}
	}
	return fmt.Errorf("connecting to Temporal at %s: %w", s.Address, err)
}

func tlsFault(text string) bool {
	for _, m := range []string{"x509:", "tls:", "authentication handshake failed"} {
		if strings.Contains(text, m) {
			return true
		}
	}
	return false
}

// tlsCause is the TLS error without the gRPC wrapping around it, which says nothing an operator can use.
func tlsCause(text string) string {
	for _, m := range []string{"x509:", "remote error: tls:", "tls:"} {
		if i := strings.Index(text, m); i >= 0 {
			return strings.TrimRight(text[i:], `"`)
		}
	}
	return text
}

func tlsHint(s Settings, text string) string {
	switch {
	case strings.Contains(text, "first record does not look like a TLS handshake"):
		return "the server speaks plain gRPC: drop the TLS settings, or give TLS's port in --address"
	case strings.Contains(text, "unknown authority"):
		return "give the CA that signed the server's certificate with --tls-ca-file (env " + EnvServerCA + ")"
	case strings.Contains(text, "certificate is valid for"), strings.Contains(text, "doesn't contain any IP SANs"):
		return "set --tls-server-name (env " + EnvServerName + ") to a name the certificate holds"
	case strings.Contains(text, "expired"):
		if strings.Contains(text, "remote error") {
			return "the server says the client certificate expired: renew --tls-cert-file " + s.ClientCertFile
		}
		return "the server's certificate has expired or is not valid yet"
	case strings.Contains(text, "certificate required"):
		return "the server wants a client certificate: give --tls-cert-file and --tls-key-file (env " + EnvClientCert + ", " + EnvClientKey + ")"
	case strings.Contains(text, "remote error"):
		if s.ClientCertFile != "" {
			return "the server refused the client certificate of --tls-cert-file " + s.ClientCertFile
		}
		return "the server refused the handshake; it may want a client certificate (--tls-cert-file, --tls-key-file)"
	case strings.Contains(text, "--tls-cert-file"), strings.Contains(text, "--tls-key-file"):
		return "the client certificate could not be loaded"
	}
	return "check --tls-ca-file, --tls-server-name and the client certificate"
}

// plainOrTLSHint says what a mismatch of plain gRPC and TLS looks like from the client, where it shows
// only as a connection the server dropped.
func plainOrTLSHint(s Settings, err error) string {
	text := err.Error()
	if s.TLSDisabled || !s.tlsWanted() {
		if strings.Contains(text, "server preface") || strings.Contains(text, "EOF") || strings.Contains(text, "connection reset") {
			return "; if the server wants TLS, give --tls (env " + EnvTLS + ")"
		}
	}
	return ""
}

func credentialName(s Settings) string {
	switch {
	case s.APIKeyFile != "":
		return "the API key in --api-key-file " + s.APIKeyFile
	case !s.TLSDisabled && strings.TrimSpace(envAPIKey()) != "":
		return "the API key in " + EnvAPIKey
	case s.ClientCertFile != "":
		return "the client certificate of --tls-cert-file " + s.ClientCertFile
	}
	return "these credentials"
}

func credentialHint(s Settings) string {
	if hint, expired := expiredKeyHint(s, time.Now()); expired {
		return hint
	}
	switch {
	case s.APIKeyFile != "" || strings.TrimSpace(envAPIKey()) != "":
		return "check " + credentialName(s) + ": it may be wrong, expired or revoked"
	case s.ClientCertFile != "":
		return "check " + credentialName(s)
	}
	return "the server wants an API key (" + EnvAPIKey + " or --api-key-file) or a client certificate (--tls-cert-file)"
}

// probeTLS shakes hands as gRPC would and returns the TLS error, if that is what went wrong. gRPC does
// not always pass it on: with TLS 1.3 a server refuses a client certificate only after the handshake,
// and an RPC then sees a connection that never becomes ready, which looks like an address that does not
// answer. A second of reading catches the server's alert; a server content with us waits for HTTP/2.
func probeTLS(ctx context.Context, address string, conf *tls.Config) error {
	conf = conf.Clone()
	// gRPC servers refuse a client that does not offer HTTP/2.
	conf.NextProtos = []string{"h2"}
	if conf.ServerName == "" {
		host, _, err := net.SplitHostPort(address)
		if err != nil {
			return nil
		}
		conf.ServerName = host
	}
	conn, err := handshake(ctx, address, conf)
	if err != nil {
		if tlsFault(err.Error()) {
			return err
		}
		return nil
	}
	defer conn.Close()
	_ = conn.SetReadDeadline(time.Now().Add(time.Second))
	if _, err := conn.Read(make([]byte, 1)); err != nil && tlsFault(err.Error()) {
		return err
	}
	return nil
}

// speaksTLS is whether the server at address answers a TLS hello, which a plain gRPC client sees only as
// a connection closed before the server's preface.
func speaksTLS(ctx context.Context, address string) bool {
	// Verification is off because the question is only whether TLS answers; nothing is sent.
	conn, err := handshake(ctx, address, &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"h2"}, MinVersion: tls.VersionTLS12}) //nolint:gosec
	if err == nil {
		conn.Close()
		return true
	}
	return strings.Contains(err.Error(), "remote error: tls:")
}

func handshake(ctx context.Context, address string, conf *tls.Config) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	d := tls.Dialer{Config: conf}
	return d.DialContext(ctx, "tcp", address)
}
