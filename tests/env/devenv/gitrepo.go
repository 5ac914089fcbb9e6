package devenv

import (
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/flotilla-gitops/flotilla/tests/env/gitenv"
)

// gitEnv makes commits reproducible and independent of the user's git configuration.
var gitEnv = []string{
	"GIT_AUTHOR_NAME=flotilla", "GIT_AUTHOR_EMAIL=flotilla@example.invalid",
	"GIT_COMMITTER_NAME=flotilla", "GIT_COMMITTER_EMAIL=flotilla@example.invalid",
	"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
}

// Git runs the git binary in dir (test fixtures and the example repository only; Flotilla itself uses go-git).
func Git(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = gitenv.Environ(gitEnv...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out)), nil
}

// InitRepo creates a git repository at dir on branch main holding a copy of src, and returns its HEAD.
func InitRepo(dir, src string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	if _, err := Git(dir, "init", "-q", "-b", "main"); err != nil {
		return "", err
	}
	if src != "" {
		if err := CopyTree(src, dir); err != nil {
			return "", err
		}
	}
	return Commit(dir, "initial content")
}

// Commit records every change in dir and returns the new HEAD.
func Commit(dir, message string) (string, error) {
	if _, err := Git(dir, "add", "-A"); err != nil {
		return "", err
	}
	if _, err := Git(dir, "commit", "-q", "--allow-empty", "-m", message); err != nil {
		return "", err
	}
	return Git(dir, "rev-parse", "HEAD")
}

// CopyTree copies regular files from src into dst, keeping relative paths.
func CopyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, 0o644)
	})
}
