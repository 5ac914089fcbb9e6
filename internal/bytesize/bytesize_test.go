package bytesize

import "testing"

func TestFormat(t *testing.T) {
	for n, want := range map[int64]string{1 << 30: "1 GiB", 4 << 20: "4 MiB", 3 << 29: "1536 MiB", 512 << 10: "512 KiB", 1000: "1000 bytes"} {
		if got := Format(n); got != want {
			t.Errorf("Format(%d) = %q, want %q", n, got, want)
		}
	}
}
