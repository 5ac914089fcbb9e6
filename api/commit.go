package api

// shortCommitLength is how many hex digits of a commit Flotilla shows: 12, as `git log --abbrev=12`, so
// that a short commit stays unique in a large repository and can be pasted into `flotilla sync --commit`.
const shortCommitLength = 12

// ShortCommit is a commit as Flotilla shows it wherever a person reads it: status messages, the Web UI's
// summaries, the CLI's tables, error messages and the LabelCommit label of a release. A commit (or
// anything) shorter than that is returned as it is.
func ShortCommit(commit string) string {
	if len(commit) > shortCommitLength {
		return commit[:shortCommitLength]
	}
	return commit
}
