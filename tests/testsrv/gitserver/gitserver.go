// Package gitserver serves the git repositories of a folder on loopback, for tests and local runs: over
// HTTPS with basic auth (git http-backend behind net/http/cgi, its certificate signed by a CA generated at
// start) and over SSH (an x/crypto/ssh server with a generated host key and public-key auth, running
// git-upload-pack per exec request). Both only serve fetches: nothing can be pushed.
package gitserver

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	"golang.org/x/crypto/ssh"
)

// gitEnv keeps the user's and the system's git configuration out of what is served.
var gitEnv = []string{"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null"}

var (
	execPathOnce sync.Once
	execPath     string
	execPathErr  error
)

// gitExecPath is where git keeps git-http-backend and git-upload-pack (`git --exec-path`).
func gitExecPath() (string, error) {
	execPathOnce.Do(func() {
		out, err := exec.Command("git", "--exec-path").Output()
		if err != nil {
			execPathErr = fmt.Errorf("git --exec-path: %w", err)
			return
		}
		execPath = strings.TrimSpace(string(out))
	})
	return execPath, execPathErr
}

// repoPath maps a repository path of a request onto the served folder; it never leaves it.
func repoPath(root, path string) string {
	return filepath.Join(root, filepath.Clean("/"+path))
}

// NewKey generates an SSH client key: its private key in OpenSSH PEM form, as a credentials store takes
// it, and its public key, for StartSSH to authorize.
func NewKey() (privatePEM []byte, public ssh.PublicKey, err error) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	block, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		return nil, nil, err
	}
	public, err = ssh.NewPublicKey(pub)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(block), public, nil
}

// unquote undoes the single quotes git and go-git put around a repository path in an exec request.
func unquote(s string) string {
	if len(s) >= 2 && s[0] == '\'' && s[len(s)-1] == '\'' {
		return strings.ReplaceAll(s[1:len(s)-1], `'\''`, `'`)
	}
	return s
}

// sameKey says whether two public keys are the same.
func sameKey(a, b ssh.PublicKey) bool { return bytes.Equal(a.Marshal(), b.Marshal()) }
