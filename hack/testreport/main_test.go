package main

import (
	"strings"
	"testing"
)

// A skip is listed under the reason the test gave, a failure with its output, and a failure sets the exit code.
func TestTheReportNamesSkipsWithTheirReasonsAndFailsOnAFailure(t *testing.T) {
	in := strings.Join([]string{
		`{"Action":"run","Package":"m/a","Test":"TestCluster"}`,
		`{"Action":"output","Package":"m/a","Test":"TestCluster","Output":"    cluster_test.go:12: -short: starts [etcd] from bin/ (make test runs it)\n"}`,
		`{"Action":"skip","Package":"m/a","Test":"TestCluster"}`,
		`{"Action":"pass","Package":"m/a","Test":"TestPure"}`,
		`{"Action":"pass","Package":"m/a","Elapsed":0.5}`,
		`{"Action":"output","Package":"m/b","Test":"TestBroken","Output":"    b_test.go:3: want 1, got 2\n"}`,
		`{"Action":"fail","Package":"m/b","Test":"TestBroken"}`,
		`{"Action":"fail","Package":"m/b","Elapsed":0.1}`,
	}, "\n")
	var out strings.Builder
	code := report(strings.NewReader(in), &out)
	got := out.String()
	for _, want := range []string{
		"ok   m/a 0.5s", "FAIL m/b 0.1s", "1 tests passed, 1 failed, 1 skipped",
		"skipped (1): -short: starts [etcd] from bin/ (make test runs it)\n    m/a.TestCluster",
		"FAILED m/b TestBroken\n    b_test.go:3: want 1, got 2",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("report lacks %q:\n%s", want, got)
		}
	}
	if code != 1 {
		t.Errorf("exit code %d, want 1 for a failed test", code)
	}
	var clean strings.Builder
	if code := report(strings.NewReader(`{"Action":"pass","Package":"m/a","Test":"TestPure"}`), &clean); code != 0 {
		t.Errorf("exit code %d for a passing run:\n%s", code, clean.String())
	}
}
