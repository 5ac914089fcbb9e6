package tmpl

import (
	"strconv"
	"strings"
)

// sequences replace sprig's until, untilStep and seq, which append one number at a time without limit
// and, when the step overflows int, never stop. These count first and refuse what is over the limit.
var sequences = map[string]any{
	"until": func(count int) ([]int, error) {
		step := 1
		if count < 0 {
			step = -1
		}
		return sequence("until", 0, count, step)
	},
	"untilStep": func(start, stop, step int) ([]int, error) { return sequence("untilStep", start, stop, step) },
	"seq":       seq,
}

const maxSequence = MaxOutput / nodeBytes

// count is how many numbers sprig's untilStep(start, stop, step) yields, computed without overflow.
func count(start, stop, step int) uint64 {
	var span, by uint64
	switch {
	case stop < start && step < 0:
		span, by = uint64(start)-uint64(stop), uint64(-(step+1))+1
	case stop > start && step > 0:
		span, by = uint64(stop)-uint64(start), uint64(step)
	default:
		return 0
	}
	n := span / by
	if span%by != 0 {
		n++
	}
	return n
}

func sequence(fn string, start, stop, step int) ([]int, error) {
	n := count(start, stop, step)
	if n > maxSequence {
		return nil, overLimit(fn, "a list of %d numbers is over %s", n, valueLimit)
	}
	out := make([]int, n)
	for i := range out {
		out[i] = start + i*step // wraps like int arithmetic does, and every value is between start and stop
	}
	return out, nil
}

// seq is sprig's seq: the numbers from start to end (inclusive) joined by spaces.
func seq(params ...int) (string, error) {
	start, end, step := 1, 0, 1
	switch len(params) {
	case 1:
		end = params[0]
		if end < start {
			step = -1
		}
	case 2:
		start, end = params[0], params[1]
		if end < start {
			step = -1
		}
	case 3:
		start, step, end = params[0], params[1], params[2]
		if end < start && step > 0 {
			return "", nil
		}
	default:
		return "", nil
	}
	inclusive := 1 // sprig counts up to end+1 (or down to end-1), wrapping as int does
	if end < start {
		inclusive = -1
	}
	n := count(start, end+inclusive, step)
	if n > MaxOutput/2 {
		return "", overLimit("seq", "%d numbers is over %s", n, outputLimit)
	}
	var b strings.Builder
	for i := uint64(0); i < n; i++ {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(strconv.Itoa(start + int(i)*step))
		if b.Len() > MaxOutput {
			return "", overLimit("seq", "%d numbers is over %s", n, outputLimit)
		}
	}
	return b.String(), nil
}
