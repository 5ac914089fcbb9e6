package gitcache

import (
	"errors"
	"net/url"
	"regexp"
	"strings"
)

// word is a run of text without spaces or quotes: Go quotes URLs in its errors (Get "https://...").
var word = regexp.MustCompile("[^\\s\"'`<>]+")

// hostAndPath is scp-style host:path without a user part (git.example.com:org/repo.git).
var hostAndPath = regexp.MustCompile(`^[A-Za-z0-9][-A-Za-z0-9.]*\.[-A-Za-z0-9.]+:.`)

// Sanitize strips user info, query and fragment from every URL in a text (a URL, or an error's message),
// in each form git takes: scheme://user:password@host/path?query#fragment and user:password@host:path.
func Sanitize(text string) string {
	return word.ReplaceAllStringFunc(text, sanitizeWord)
}

func sanitizeWord(w string) string {
	if i := strings.Index(w, "://"); i > 0 && isSchemeChar(w[i-1]) {
		head, rest := w[:i+3], w[i+3:]
		// The user part ends at the last '@': a password may hold '/', '?' or '#' unescaped, and cutting too
		// much of a URL only loses text.
		if at := strings.LastIndexByte(rest, '@'); at >= 0 {
			rest = rest[at+1:]
		}
		return head + cutQuery(rest)
	}
	if at := strings.LastIndexByte(w, '@'); at >= 0 {
		// user@host:path; an address followed by a colon (by t@example.com: ...) is not one.
		host, path, scp := strings.Cut(w[at+1:], ":")
		if scp && host != "" && (path != "" || strings.Contains(w[:at], ":")) {
			return cutQuery(w[at+1:])
		}
	}
	if hostAndPath.MatchString(w) {
		return cutQuery(w)
	}
	return w
}

func cutQuery(s string) string {
	if i := strings.IndexAny(s, "?#"); i >= 0 {
		return s[:i]
	}
	return s
}

func isSchemeChar(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '+' || c == '-' || c == '.'
}

// secretsOf lists the parts of a repository URL that may be credentials (password, query, fragment), to
// redact wherever they show up verbatim, however the URL around them was written out.
func secretsOf(repo string) []string {
	var parts []string
	rest := repo
	if i := strings.Index(rest, "://"); i >= 0 {
		rest = rest[i+3:]
	}
	if at := strings.LastIndexByte(rest, '@'); at >= 0 {
		if _, password, ok := strings.Cut(rest[:at], ":"); ok {
			parts = append(parts, password)
			if p, err := url.PathUnescape(password); err == nil {
				parts = append(parts, p)
			}
		}
		rest = rest[at+1:]
	}
	if i := strings.IndexAny(rest, "?#"); i >= 0 {
		parts = append(parts, rest[i+1:])
		for _, kv := range strings.FieldsFunc(rest[i+1:], func(r rune) bool { return r == '&' || r == '?' || r == '#' }) {
			if _, v, ok := strings.Cut(kv, "="); ok {
				parts = append(parts, v)
			}
		}
	}
	var long []string
	for _, p := range parts {
		// Too short a string would blank out ordinary words, and is no secret worth the damage.
		if len(p) >= 4 {
			long = append(long, p)
		}
	}
	return long
}

// sanitizedError is an error whose text went through Sanitize. It answers errors.Is like the original
// (context.Canceled stays recognisable) but does not unwrap to it: whatever walks the chain (Temporal turns
// each wrapped error into a failure cause) would find the raw text again.
type sanitizedError struct {
	msg  string
	orig error
}

func (e *sanitizedError) Error() string        { return e.msg }
func (e *sanitizedError) Is(target error) bool { return errors.Is(e.orig, target) }

// sanitizeError returns err itself when neither its text nor any error it wraps shows a URL's user info,
// query or fragment or a credential of repo; else an error with the cleaned text.
func sanitizeError(err error, repo string) error {
	if err == nil {
		return nil
	}
	secrets := secretsOf(repo)
	clean := func(s string) string {
		s = Sanitize(s)
		for _, p := range secrets {
			s = strings.ReplaceAll(s, p, "***")
		}
		return s
	}
	if isClean(err, clean) {
		return err
	}
	return &sanitizedError{msg: clean(err.Error()), orig: err}
}

func isClean(err error, clean func(string) string) bool {
	if err == nil {
		return true
	}
	if msg := err.Error(); clean(msg) != msg {
		return false
	}
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		return isClean(u.Unwrap(), clean)
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			if !isClean(e, clean) {
				return false
			}
		}
	}
	return true
}

// errUnparsableURL stands for url.Parse's error, which repeats the URL and, for a password holding '/'
// unescaped, reports a piece of it as an "invalid port".
var errUnparsableURL = errors.New("the repository URL does not parse (it is not repeated here: it may hold credentials)")

func checkParses(repo string) error {
	if strings.Contains(repo, "://") {
		if _, err := url.Parse(repo); err != nil {
			return errUnparsableURL
		}
	}
	return nil
}
