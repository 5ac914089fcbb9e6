package agentclient

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
)

// ErrReleaseNotFound is returned (wrapped) by calls that need an existing release, such as CheckRelease.
// Observe, History and Uninstall report a missing release without an error.
var ErrReleaseNotFound = errors.New("release not found")

// IsUnreachable reports whether err means the cluster could not be talked to properly: connection
// refused or reset, DNS, timeouts, TLS and certificate failures, 429 and 5xx answers (typically from a
// proxy or an overloaded apiserver). Such errors are transient: retry later with the same input.
//
// Helm flattens many errors into strings (joined update errors, hook failures), so after the typed
// checks the message is matched against the texts Go's net, tls and client-go produce.
func IsUnreachable(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) {
		return false
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		code := int(status.Status().Code)
		if code >= http.StatusInternalServerError || code == http.StatusTooManyRequests ||
			apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) {
			return true
		}
		if code >= 400 {
			return false // the apiserver answered: it is reachable
		}
	}
	var (
		netErr      net.Error
		unknownCA   x509.UnknownAuthorityError
		certInvalid x509.CertificateInvalidError
		hostname    x509.HostnameError
		verify      *tls.CertificateVerificationError
		header      tls.RecordHeaderError
	)
	switch {
	case errors.As(err, &netErr), errors.As(err, &unknownCA), errors.As(err, &certInvalid),
		errors.As(err, &hostname), errors.As(err, &verify), errors.As(err, &header):
		return true
	case errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH),
		errors.Is(err, syscall.ETIMEDOUT), errors.Is(err, syscall.EPIPE),
		errors.Is(err, io.ErrUnexpectedEOF):
		return true
	}
	return containsAny(err.Error(), unreachableTexts)
}

var unreachableTexts = []string{
	"connection refused", "connection reset", "broken pipe", "no route to host", "network is unreachable",
	"i/o timeout", "tls handshake timeout", "context deadline exceeded", "kubernetes cluster unreachable",
	"x509: ", "tls: ", "http2: client connection lost", "http2: server sent goaway", "unexpected eof",
	"no such host", "server is currently unable to handle the request",
	"unable to return a response in the time allotted", "too many requests",
	"service unavailable", "bad gateway", "gateway timeout",
}

// IsInvalid reports whether the apiserver rejected the objects themselves: 422 Invalid, 400 Bad Request,
// a kind the cluster does not serve, an immutable field, an admission webhook denial. Retrying the same
// input cannot succeed; a new input (chart, values) or Force is needed.
func IsInvalid(err error) bool {
	if err == nil {
		return false
	}
	if apierrors.IsInvalid(err) || apierrors.IsBadRequest(err) || meta.IsNoMatchError(err) {
		return true
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return false // any other status is not about the objects' content
	}
	if IsUnreachable(err) {
		return false
	}
	return containsAny(err.Error(), invalidTexts)
}

var invalidTexts = []string{
	" is invalid", "field is immutable", "no matches for kind", "unable to recognize",
	"resource mapping not found", "unknown field", "error validating data", "strict decoding error",
	"cannot be handled as a", "the server rejected our request", "denied the request",
	"could not find the requested resource",
	"cannot be deployed: objects must stay in namespace", // ConfinementError, flattened by Helm for hooks
}

func containsAny(s string, subs []string) bool {
	s = strings.ToLower(s)
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}
