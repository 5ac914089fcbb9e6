package agentclient

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestLookupConfinementAllowsDiscoveryAndTheNamespaceOnly(t *testing.T) {
	for path, allowed := range map[string]bool{
		"/api": true, "/api/v1": true, "/apis": true, "/apis/apps": true, "/apis/apps/v1": true,
		"/api/v1/namespaces/shop": true, "/api/v1/namespaces/shop/secrets/x": true, "/apis/apps/v1/namespaces/shop/deployments": true,
		"/api/v1/namespaces/other/secrets/x": false, "/api/v1/secrets": false, "/api/v1/nodes": false, "/version": false,
		"/apis/apps/v1/namespaces/other/deployments": false,
	} {
		require.Equal(t, allowed, allowedLookupPath(path, "shop"), path)
	}
}
