package agentclient

import (
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

func obj(t *testing.T, y string) map[string]any {
	t.Helper()
	js, err := yaml.YAMLToJSON([]byte(y))
	require.NoError(t, err)
	u := &unstructured.Unstructured{}
	require.NoError(t, u.UnmarshalJSON(js))
	return u.Object
}

const manifestDeployment = `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels: {app: web}
  creationTimestamp: null
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}, creationTimestamp: null}
    spec:
      hostNetwork: false
      containers:
      - name: web
        image: nginx:1.27
        args: ["--port", "8080"]
        ports: [{containerPort: 8080}]
        env: [{name: A, value: "1"}, {name: B, value: ""}]
        resources:
          limits: {cpu: 0.5, memory: 1024Mi}
          requests: {}
`

// What the apiserver returns for manifestDeployment: defaults everywhere, server metadata, status,
// canonical quantities, and an extra admission-added volume mount.
const liveDeployment = `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: default
  uid: 0b5c
  resourceVersion: "812"
  generation: 1
  creationTimestamp: "2026-11-22T10:00:00Z"
  labels: {app: web, app.kubernetes.io/managed-by: Helm}
  annotations: {deployment.kubernetes.io/revision: "1", meta.helm.sh/release-name: web}
  managedFields: [{manager: helm}]
spec:
  replicas: 2
  revisionHistoryLimit: 10
  progressDeadlineSeconds: 600
  strategy: {type: RollingUpdate, rollingUpdate: {maxSurge: 25%, maxUnavailable: 25%}}
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      restartPolicy: Always
      dnsPolicy: ClusterFirst
      schedulerName: default-scheduler
      terminationGracePeriodSeconds: 30
      securityContext: {}
      containers:
      - name: web
        image: nginx:1.27
        args: ["--port", "8080"]
        imagePullPolicy: IfNotPresent
        terminationMessagePath: /dev/termination-log
        terminationMessagePolicy: File
        ports: [{containerPort: 8080, protocol: TCP}]
        env: [{name: A, value: "1"}, {name: B}]
        volumeMounts: [{name: token, mountPath: /var/run/secrets}]
        resources:
          limits: {cpu: 500m, memory: 1Gi}
status:
  replicas: 2
  readyReplicas: 1
`

func TestApiserverDefaultsAreNotDrift(t *testing.T) {
	require.Empty(t, driftPaths(obj(t, manifestDeployment), obj(t, liveDeployment)))
}

func TestChangedFieldsAreDrift(t *testing.T) {
	cases := map[string]struct {
		edit func(live map[string]any)
		want []string
	}{
		"image changed": {
			edit: func(l map[string]any) { container(l)["image"] = "nginx:1.28" },
			want: []string{"spec.template.spec.containers[name=web].image"},
		},
		"scaled": {
			edit: func(l map[string]any) { l["spec"].(map[string]any)["replicas"] = int64(5) },
			want: []string{"spec.replicas"},
		},
		"label removed": {
			edit: func(l map[string]any) { delete(l["metadata"].(map[string]any)["labels"].(map[string]any), "app") },
			want: []string{"metadata.labels.app"},
		},
		"env var removed": {
			edit: func(l map[string]any) { container(l)["env"] = []any{map[string]any{"name": "B"}} },
			want: []string{"spec.template.spec.containers[name=web].env[name=A]"},
		},
		"argument changed": {
			edit: func(l map[string]any) { container(l)["args"] = []any{"--port", "9090"} },
			want: []string{"spec.template.spec.containers[name=web].args"},
		},
		"limit raised": {
			edit: func(l map[string]any) {
				container(l)["resources"].(map[string]any)["limits"].(map[string]any)["cpu"] = "1"
			},
			want: []string{"spec.template.spec.containers[name=web].resources.limits.cpu"},
		},
		"host network turned on": {
			edit: func(l map[string]any) { podSpec(l)["hostNetwork"] = true },
			want: []string{"spec.template.spec.hostNetwork"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			live := obj(t, liveDeployment)
			tc.edit(live)
			require.Equal(t, tc.want, driftPaths(obj(t, manifestDeployment), live))
		})
	}
}

func TestScaledToZeroInTheManifestIsCompared(t *testing.T) {
	desired := obj(t, "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: w}\nspec: {replicas: 0}")
	require.Empty(t, driftPaths(desired, obj(t, "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: w}\nspec: {replicas: 0}")))
	require.Equal(t, []string{"spec.replicas"},
		driftPaths(desired, obj(t, "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: w}\nspec: {replicas: 3}")))
}

func TestSecretStringDataComparesAsData(t *testing.T) {
	desired := obj(t, "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\nstringData: {password: hunter2}")
	require.Empty(t, driftPaths(desired, obj(t, "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\ntype: Opaque\ndata: {password: aHVudGVyMg==}")))
	require.Equal(t, []string{"data.password"},
		driftPaths(desired, obj(t, "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\ndata: {password: b3RoZXI=}")))
}

func TestServicePortsMatchByPortAndIgnoreAssignedFields(t *testing.T) {
	desired := obj(t, `
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  type: NodePort
  clusterIP: ""
  selector: {app: web}
  ports: [{port: 80, targetPort: http}, {port: 443, targetPort: 8443}]`)
	live := obj(t, `
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  type: NodePort
  clusterIP: 10.0.0.12
  clusterIPs: [10.0.0.12]
  ipFamilies: [IPv4]
  sessionAffinity: None
  selector: {app: web}
  ports:
  - {port: 443, targetPort: 8443, protocol: TCP, nodePort: 31443}
  - {port: 80, targetPort: http, protocol: TCP, nodePort: 31080}`)
	require.Empty(t, driftPaths(desired, live))
}

func container(live map[string]any) map[string]any {
	return podSpec(live)["containers"].([]any)[0].(map[string]any)
}

func podSpec(live map[string]any) map[string]any {
	return live["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)
}
