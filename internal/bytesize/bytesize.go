// Package bytesize writes a byte limit the way an operator configures it: 4 MiB, 1 GiB, 512 KiB.
package bytesize

import "fmt"

// Format writes n in the largest binary unit that divides it exactly.
func Format(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}
