package tests

// configMapV is a manifest of ConfigMap "app" whose data.v is the value given.
const configMapV = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\ndata:\n  v: %q\n"

// fqdnBundle is a repository with one Helm bundle, "web", whose values take fqdn from each cluster's
// templateValues at generated.cluster_metadata.fqdn: the value Fleet's users report missing on one cluster
// of many (rancher/fleet#2943, #3277). Its chart writes fqdn into ConfigMap "web" in namespace "web".
func fqdnBundle() map[string]string {
	return map[string]string{
		"web/fleet.yaml": `defaultNamespace: web
helm:
  chart: ./chart
  values:
    fqdn: ${ .ClusterValues.generated.cluster_metadata.fqdn }
`,
		"web/chart/Chart.yaml":               "apiVersion: v2\nname: web\nversion: 0.1.0\n",
		"web/chart/templates/configmap.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\ndata:\n  fqdn: {{ .Values.fqdn | quote }}\n",
	}
}

// fqdnValues are the templateValues of a cluster whose fqdn is given; with "" the cluster has its
// generated.cluster_metadata but no fqdn in it, and fqdnBundle fails to render there.
func fqdnValues(fqdn string) map[string]any {
	metadata := map[string]any{}
	if fqdn != "" {
		metadata["fqdn"] = fqdn
	}
	return map[string]any{"generated": map[string]any{"cluster_metadata": metadata}}
}
