// Package names derives Helm release names from bundle names the way Fleet does.
package names

import (
	"crypto/md5"
	"encoding/hex"
	"regexp"
	"strings"
)

var (
	dnsLabel    = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	invalidChar = regexp.MustCompile(`[^a-z0-9-]`)
	upperOrOdd  = regexp.MustCompile(`[^a-z0-9-]`)
	dashes      = regexp.MustCompile(`-+`)
)

const maxRelease = 53

func sum(s string) string {
	h := md5.Sum([]byte(s))
	return hex.EncodeToString(h[:])
}

// HelmReleaseName turns a bundle name (possibly a path like "repo/charts/web") into a valid release name:
// `/` becomes `-`, names that needed changing get a short hash suffix, and long names are cut to 53.
func HelmReleaseName(str string) string {
	orig := str
	str = strings.ReplaceAll(str, "/", "-")
	if upperOrOdd.MatchString(str) {
		str = str + "-" + sum(orig)[:8]
	}
	str = strings.ToLower(str)
	str = invalidChar.ReplaceAllString(str, "-")
	str = dashes.ReplaceAllString(str, "-")
	str = strings.Trim(str, "-")
	if len(str) > maxRelease {
		str = str[:maxRelease-6] + "-" + sum(str)[:5]
	}
	if !dnsLabel.MatchString(str) {
		return sum(orig)[:24]
	}
	return str
}
