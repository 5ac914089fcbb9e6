// Package version is the version Flotilla's binaries report: what `flotilla cluster list` shows of each
// agent, and what the agent's image tag defaults to.
package version

import "runtime/debug"

// Version is set at build time (-ldflags "-X github.com/flotilla-gitops/flotilla/internal/version.Version=v1.2.3");
// otherwise String derives one from the commit the binary was built from.
var Version = ""

// String is the binary's version: Version when set, else "dev-<commit>" ("-dirty" for a modified tree),
// else "dev".
func String() string {
	if Version != "" {
		return Version
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "dev"
	}
	rev, dirty := "", false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return "dev"
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if dirty {
		return "dev-" + rev + "-dirty"
	}
	return "dev-" + rev
}

// ImageTag is the tag of the agent image this build defaults to: its version, or "" for a build that knows
// no commit, whose agents then need an image named at registration. The CLI (`flotilla agent manifest`)
// and the worker (the agent it keeps) take it from here, so both name the same image.
func ImageTag() string {
	if v := String(); v != "dev" {
		return v
	}
	return ""
}
