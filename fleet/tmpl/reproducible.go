package tmpl

import (
	"fmt"
	"slices"
	"time"

	"github.com/Masterminds/sprig/v3"
)

// reproducible replaces sprig's functions whose result depends on more than their arguments: the
// worker's time zone, the clock, or Go's random map order.
var reproducible = map[string]any{
	"date": func(layout string, date any) (string, error) { return formatDate("date", layout, date, "UTC") },
	"dateInZone": func(layout string, date any, zone string) (string, error) {
		return formatDate("dateInZone", layout, date, zone)
	},
	"date_in_zone": func(layout string, date any, zone string) (string, error) {
		return formatDate("date_in_zone", layout, date, zone)
	},
	"htmlDate": func(date any) (string, error) { return formatDate("htmlDate", "2006-01-02", date, "UTC") },
	"htmlDateInZone": func(date any, zone string) (string, error) {
		return formatDate("htmlDateInZone", "2006-01-02", date, zone)
	},
	"toDate": func(layout, s string) time.Time {
		t, _ := time.ParseInLocation(layout, s, time.UTC)
		return t
	},
	"mustToDate":    func(layout, s string) (time.Time, error) { return time.ParseInLocation(layout, s, time.UTC) },
	"durationRound": durationRound,
	"keys":          keysInOrder,
	"values":        valuesInOrder,
}

var sprigFuncs = sprig.TxtFuncMap()

// formatDate is sprig's dateInZone with UTC for the worker's zone, and an error where sprig would use
// the current time because the value is not a date.
func formatDate(fn, layout string, date any, zone string) (string, error) {
	switch date.(type) {
	case time.Time, *time.Time, int64, int, int32:
	default:
		return "", fmt.Errorf("%s: %T is not a date (a date from toDate, or Unix seconds as an integer)", fn, date)
	}
	if zone == "Local" {
		zone = "UTC"
	}
	return sprigFuncs["dateInZone"].(func(string, any, string) string)(layout, date, zone), nil
}

func durationRound(d any) (string, error) {
	if _, ok := d.(time.Time); ok {
		return "", fmt.Errorf("durationRound: the time since a date depends on the clock; give a duration")
	}
	return sprigFuncs["durationRound"].(func(any) string)(d), nil
}

// keysInOrder is sprig's keys with each map's keys sorted.
func keysInOrder(dicts ...map[string]any) []string {
	out := []string{}
	for _, d := range dicts {
		keys := make([]string, 0, len(d))
		for k := range d {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		out = append(out, keys...)
	}
	return out
}

// valuesInOrder is sprig's values in the order of their keys.
func valuesInOrder(d map[string]any) []any {
	out := []any{}
	for _, k := range keysInOrder(d) {
		out = append(out, d[k])
	}
	return out
}
