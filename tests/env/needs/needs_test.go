package needs

import (
	"os"
	"path/filepath"
	"testing"
)

// A program that is there passes, and BinDir follows FLOTILLA_BIN.
func TestBinariesFindsWhatIsInTheBinDir(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: Binaries skips by design")
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "etcd"), nil, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("FLOTILLA_BIN", dir)
	if got := Binaries(t, "etcd"); got != dir {
		t.Fatalf("Binaries returned %s, want %s", got, dir)
	}
}
