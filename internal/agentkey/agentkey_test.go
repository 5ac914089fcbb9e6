package agentkey

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestAClustersKeyOpensItsOwnPackagesOnly(t *testing.T) {
	inst, err := Generate()
	require.NoError(t, err)
	a, b := inst.ForCluster("", "edge-1"), inst.ForCluster("team-b", "edge-1")
	require.Equal(t, a.Encode(), inst.ForCluster("fleet-default", "edge-1").Encode(), "fleet-default is the empty workspace")
	require.NotEqual(t, a.Encode(), b.Encode(), "the same name in another workspace is another cluster")

	sealed, err := a.Seal([]byte("aad"), []byte("values of edge-1"))
	require.NoError(t, err)
	plain, err := a.Open([]byte("aad"), sealed)
	require.NoError(t, err)
	require.Equal(t, "values of edge-1", string(plain))
	_, err = b.Open([]byte("aad"), sealed)
	require.ErrorIs(t, err, ErrNotSealed)
	_, err = a.Open([]byte("other"), sealed)
	require.ErrorIs(t, err, ErrNotSealed, "bound to what it was sealed for")

	g := a.Grant("apply", []byte("m"))
	require.NoError(t, a.Verify("apply", []byte("m"), g))
	require.ErrorIs(t, b.Verify("apply", []byte("m"), g), ErrNotGranted)
	require.ErrorIs(t, a.Verify("uninstall", []byte("m"), g), ErrNotGranted, "a grant of one kind is not one of another")
	require.ErrorIs(t, a.Verify("apply", []byte("m2"), g), ErrNotGranted)
	require.ErrorContains(t, a.Verify("apply", []byte("m"), ""), "no grant")

	parsed, err := Parse(inst.Encode()+"\n", "test")
	require.NoError(t, err)
	require.Equal(t, inst.Encode(), parsed.Encode())
	_, err = Parse("c2hvcnQ=", "FLOTILLA_AGENT_KEY")
	require.EqualError(t, err, "FLOTILLA_AGENT_KEY: not a key (base64 of 32 bytes, as `flotilla installation-key` writes one)")
	require.Equal(t, "agentkey.Key{…} agentkey.Key{…}", fmt.Sprintf("%v %s", inst, a), "printing a key shows nothing of it")
}
