package api

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/intstr"
)

var update = flag.Bool("update", false, "rewrite testdata/payloads.txt from the current types")

// payloads is every type that travels through Temporal or out of `flotilla status -o json`.
var payloads = []any{
	BundleRef{}, Dependency{}, PollInput{}, PollResult{}, LeavingCluster{}, PlanInput{}, Plan{}, PlannedCluster{}, DeployOptions{},
	ClusterTarget{}, ObserveInput{}, Observation{}, BundleObservation{}, ReleaseInfo{}, ResourceSummary{},
	ResourceCounts{}, ApplyInput{}, BundleAction{}, ApplyResult{}, Sweep{}, ReleaseRef{}, BundleApplyResult{},
	UninstallInput{}, UninstallResult{}, ListClusterWorkflowsInput{}, ListClusterWorkflowsResult{},
	NotifyGitReposInput{}, NotifyGitReposResult{}, SyncRequest{},
	GitRepoStatus{}, ClusterStatus{}, BundleStatus{}, Summary{},
	SetPollingIntervalInput{}, SetPollingIntervalResult{}, ApproveRemovalInput{}, ApproveRemovalResult{},
	PrepareInput{}, PrepareResult{}, GrantRemovalInput{}, PreparedBundle{}, ReadContentInput{}, ContentChunk{},
	AgentWorkflowInput{}, AgentStatus{}, AgentDesiredInput{}, AgentDesired{}, KeepAgentInput{}, KeepAgentResult{},
	GitRepoInput{}, RunOptions{}, ClusterWorkflowInput{}, DesiredUpdate{}, RemoveRequest{}, ClusterReport{}, InventoryInput{},
	AwaitClusterRemovedInput{}, AwaitClusterRemovedResult{}, Holder{}, LeavingHolders{}, LeavingHoldersInput{}, LeavingHoldersResult{},
	Deployment{}, DeployedBundle{}, RolloutPlan{}, PartitionPlan{}, RolloutStatus{}, PartitionStatus{}, RolloutMark{}, RolloutEvent{},
	RolloutActionInput{}, RolloutActionResult{}, RollbackInput{}, RollbackResult{}, Pin{},
	DiffInput{}, DiffTargets{}, DiffTarget{}, DiffWorkflowInput{}, DiffResult{}, DiffClusterInput{}, ClusterDiff{}, BundleDiff{},
	ObjectDiff{}, FieldDiff{}, DiffTargetInput{}, StatusPageInput{}, PackedInventory{},
}

// Recorded histories hold these payloads and scripts parse `flotilla status -o json`: a renamed JSON key,
// a dropped omitempty or a removed field would break both without a compile error. Each payload is
// encoded twice, with every field set and with none, and compared with testdata/payloads.txt; a field
// added on purpose is recorded with -update.
func TestPayloadJSONKeepsItsSpelling(t *testing.T) {
	var got strings.Builder
	for _, p := range payloads {
		typ := reflect.TypeOf(p)
		full := reflect.New(typ)
		fill(full.Elem(), 1)
		got.WriteString(typ.Name() + "\n" + encode(t, full.Interface()) + "\n" + encode(t, reflect.New(typ).Interface()) + "\n")
	}
	golden := filepath.Join("testdata", "payloads.txt")
	if *update {
		if err := os.WriteFile(golden, []byte(got.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	wantLines, gotLines := strings.Split(string(want), "\n"), strings.Split(got.String(), "\n")
	for i := 0; i < len(wantLines) || i < len(gotLines); i++ {
		var w, g string
		if i < len(wantLines) {
			w = wantLines[i]
		}
		if i < len(gotLines) {
			g = gotLines[i]
		}
		if w != g {
			t.Errorf("%s line %d:\nwant %s\n got %s", golden, i+1, w, g)
		}
	}
}

func encode(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("%T: %v", v, err)
	}
	return string(b)
}

// fill sets every exported field of v to a fixed non-zero value, one element per slice and map, down to
// a depth that covers every payload.
func fill(v reflect.Value, depth int) {
	if depth > 12 {
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(v.Elem(), depth+1)
	case reflect.Struct:
		if v.Type() == reflect.TypeOf(time.Time{}) {
			v.Set(reflect.ValueOf(time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)))
			return
		}
		if v.Type() == reflect.TypeOf(intstr.IntOrString{}) {
			v.Set(reflect.ValueOf(intstr.FromString("10%")))
			return
		}
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).IsExported() {
				fill(v.Field(i), depth+1)
			}
		}
	case reflect.String:
		v.SetString("s")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(3)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(4)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(1.5)
	case reflect.Slice:
		if v.Type() == reflect.TypeOf(json.RawMessage{}) {
			v.SetBytes([]byte(`{"raw":true}`))
			return
		}
		s := reflect.MakeSlice(v.Type(), 1, 1)
		fill(s.Index(0), depth+1)
		v.Set(s)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		fill(k, depth+1)
		fill(e, depth+1)
		m.SetMapIndex(k, e)
		v.Set(m)
	}
}
