package api

import "testing"

// A status message, a CLI table and a release's commit label name a commit by the same twelve digits, and
// what is not a full commit (an empty one before the first poll, a prefix a person typed) is left whole.
func TestShortCommitIsTheFirstTwelveDigitsOfACommit(t *testing.T) {
	for in, want := range map[string]string{
		"0123456789abcdef0123456789abcdef01234567": "0123456789ab",
		"0123456789ab": "0123456789ab",
		"0123456":      "0123456",
		"":             "",
	} {
		if got := ShortCommit(in); got != want {
			t.Errorf("ShortCommit(%q) = %q, want %q", in, got, want)
		}
	}
}
