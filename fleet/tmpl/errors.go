package tmpl

import (
	"errors"
	"regexp"
	"strings"
)

// TemplateError is a values template that does not render; Source names the file (and key) it came from.
type TemplateError struct {
	Source string
	Err    error
}

func (e *TemplateError) Error() string {
	return e.Source + ": " + describe(e.Err, strings.Contains(e.Source, ": helm."))
}

func (e *TemplateError) Unwrap() error { return e.Err }

// IsTemplateError reports whether err is (or wraps) a TemplateError.
func IsTemplateError(err error) bool {
	var te *TemplateError
	return errors.As(err, &te)
}

var (
	execErr  = regexp.MustCompile(`^template: .*?:(\d+):\d+: executing ".*?" at (<.*?>): (.*)$`)
	parseErr = regexp.MustCompile(`^template: .*?:(\d+): (.*)$`)
)

// describe turns text/template's messages into `line N: <expr>: cause`, and a limit into
// `line N: function: what was over which limit`. Lines of inline helm.values and templateValues refer to
// Flotilla's own YAML rendering of them, so only file sources keep their line.
func describe(err error, inline bool) string {
	var dup *duplicateKeyError
	if errors.As(err, &dup) {
		return dup.describe(inline)
	}
	msg := err.Error()
	line := ""
	if m := execErr.FindStringSubmatch(msg); m != nil {
		line, msg = m[1], m[2]+": "+m[3]
	} else if m := parseErr.FindStringSubmatch(msg); m != nil {
		line, msg = m[1], m[2]
	}
	var le *limitError
	if errors.As(err, &le) {
		msg = le.Error()
	}
	if line == "" || inline {
		return msg
	}
	return "line " + line + ": " + msg
}
