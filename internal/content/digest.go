// Package content is a content-addressed store of packages on disk: each is kept under the sha256 of
// its bytes, so a name always means the same bytes, on every worker and in every process sharing the
// directory, and an agent can check what it fetched.
package content

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
)

const digestPrefix = "sha256:"

// Digest is the digest of data, as Put stores it under: "sha256:<64 lowercase hex>".
func Digest(data []byte) string {
	sum := sha256.Sum256(data)
	return digestPrefix + hex.EncodeToString(sum[:])
}

// ParseDigest returns the hex of a digest, refusing anything but sha256 and 64 lowercase hex digits: a
// digest comes from another process and becomes a file name, so it can never be a path.
func ParseDigest(digest string) (string, error) {
	h, ok := strings.CutPrefix(digest, digestPrefix)
	if !ok || len(h) != sha256.Size*2 || strings.ToLower(h) != h {
		return "", fmt.Errorf("digest %q: not sha256:<64 lowercase hex digits>", digest)
	}
	if _, err := hex.DecodeString(h); err != nil {
		return "", fmt.Errorf("digest %q: not sha256:<64 lowercase hex digits>", digest)
	}
	return h, nil
}
