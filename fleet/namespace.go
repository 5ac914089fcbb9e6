package fleet

import "strings"

// ProtectedNamespace reports whether deleteNamespace must leave a namespace alone, as Fleet does: default,
// and the namespaces of Kubernetes (kube-*), of Fleet's agents and of Rancher's Fleet (fleet-*,
// cattle-fleet-*), which hold what keeps a cluster running or managed.
func ProtectedNamespace(ns string) bool {
	return ns == "" || ns == "default" || strings.HasPrefix(ns, "kube-") || strings.HasPrefix(ns, "fleet-") ||
		strings.HasPrefix(ns, "cattle-fleet-")
}
