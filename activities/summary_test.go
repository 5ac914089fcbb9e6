package activities

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flotilla-gitops/flotilla/agentclient"
	"github.com/flotilla-gitops/flotilla/api"
)

func object(kind, name, state, msg string) agentclient.ObjectStatus {
	return agentclient.ObjectStatus{Ref: agentclient.ObjectRef{APIVersion: "v1", Kind: kind, Namespace: "app", Name: name}, State: state, Message: msg}
}

func TestSummaryCountsEveryObjectAndNamesTheWorstFirst(t *testing.T) {
	objs := []agentclient.ObjectStatus{
		object("ConfigMap", "a", agentclient.StateReady, ""),
		object("Deployment", "web", agentclient.StateNotReady, "Deployment web: Available: 0/1"),
		object("ConfigMap", "b", agentclient.StateMissing, "ConfigMap b: not found"),
		object("ConfigMap", "old", agentclient.StateOrphaned, "ConfigMap old: left over from revision 1"),
		object("Service", "web", agentclient.StateModified, "Service web: modified: spec.ports[name=http].port"),
	}
	s := summarizeObjects(objs)
	require.Equal(t, api.ResourceCounts{DesiredReady: 4, Ready: 1, NotReady: 1, Missing: 1, Modified: 1, Orphaned: 1}, s.Counts,
		"a missing object is still desired; an orphan is not")
	require.Equal(t, []string{
		"configmap app/b missing",
		"service app/web modified: Service web: modified: spec.ports[name=http].port",
		"configmap app/old orphaned",
		"deployment app/web notReady: Deployment web: Available: 0/1",
	}, s.NonReady)
}

func TestSummaryNamesOneOfEachStateBeforeTenOfOne(t *testing.T) {
	var objs []agentclient.ObjectStatus
	for i := range 15 {
		objs = append(objs, object("ConfigMap", fmt.Sprintf("cm-%02d", i), agentclient.StateMissing, ""))
	}
	objs = append(objs, object("Deployment", "web", agentclient.StateNotReady, "Deployment web: Available: 0/1"))
	s := summarizeObjects(objs)
	require.Equal(t, 16, s.Counts.DesiredReady)
	require.Len(t, s.NonReady, 11, "ten entries and a count of the rest")
	require.Equal(t, "configmap app/cm-00 missing", s.NonReady[0])
	require.Contains(t, s.NonReady, "deployment app/web notReady: Deployment web: Available: 0/1", "the only not-ready object is named")
	require.Equal(t, "and 6 more", s.NonReady[10])

	again := summarizeObjects(objs)
	require.Equal(t, s.NonReady, again.NonReady, "stable order")
}
