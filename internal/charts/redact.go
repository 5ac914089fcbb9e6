package charts

import (
	"errors"
	"net/url"
	"strings"
)

// redact cuts the user info, query and fragment out of a URL, for messages and locks. Text that does
// not parse as a URL keeps only what precedes any '@', '?' or '#' after the scheme.
func redact(raw string) string {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return raw
	}
	if at := strings.LastIndexByte(rest, '@'); at >= 0 {
		// A password may hold '/', '?' or '#' unescaped: cut at the last '@', losing at most some text.
		rest = rest[at+1:]
	}
	if i := strings.IndexAny(rest, "?#"); i >= 0 {
		rest = rest[:i]
	}
	return scheme + "://" + rest
}

// cleanError keeps errors.Is of an error whose text had a URL redacted, without unwrapping to the
// original text (whatever walks a chain, Temporal's failure conversion included, would find it again).
type cleanError struct {
	msg  string
	orig error
}

func (e *cleanError) Error() string        { return e.msg }
func (e *cleanError) Is(target error) bool { return errors.Is(e.orig, target) }

// transportError describes a failed request without repeating its URL (the message names it already):
// `dial tcp 127.0.0.1:3456: connect: connection refused`, `context deadline exceeded`.
func transportError(err error) error {
	var uerr *url.Error
	if errors.As(err, &uerr) {
		return &cleanError{msg: redactAll(uerr.Err.Error()), orig: err}
	}
	return &cleanError{msg: redactAll(err.Error()), orig: err}
}

// redactAll redacts every URL in a text.
func redactAll(text string) string {
	fields := strings.FieldsFunc(text, func(r rune) bool { return r == ' ' || r == '"' || r == '\'' })
	for _, f := range fields {
		if strings.Contains(f, "://") {
			if r := redact(f); r != f {
				text = strings.ReplaceAll(text, f, r)
			}
		}
	}
	return text
}
