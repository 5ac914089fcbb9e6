#!/usr/bin/env bash
# Builds the third-party binaries Flotilla runs (Temporal dev server, etcd, Kubernetes control plane, kwok,
# the CNCF distribution registry that serves OCI charts in tests, the Temporal server with its SQL schema tool
# and the Web UI server that the docker-compose and mTLS tests run)
# from the Go module proxy into a version-keyed cache outside the checkout, then links them into bin/.
# A tool whose cached binary already exists is not rebuilt, so a clean clone on a warm machine costs seconds.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cache=${FLOTILLA_TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/flotilla/tools}
mkdir -p "$cache" "$root/bin"

TEMPORAL_VERSION=v1.5.1 # keep in step with hack/tools/temporal-cli/go.mod
TEMPORAL_CLI_SQLITE_VERSION=v1.51.0 # keep in step with hack/tools/temporal-cli/go.mod
K8S_VERSION=v1.34.4
ETCD_VERSION=v3.6.5
KWOK_VERSION=v0.7.0
WORKFLOWCHECK_VERSION=v0.6.0
REGISTRY_VERSION=v3.1.2 # keep in step with hack/tools/registry/go.mod
TEMPORAL_SERVER_VERSION=v1.32.1 # keep in step with hack/tools/temporal-server/go.mod
TEMPORAL_UI_VERSION=v2.55.0 # keep in step with hack/tools/temporal-ui/go.mod

export CGO_ENABLED=0
ldflags="-s -w"

link() { # link <name> <cached-path>
  ln -sfn "$2" "$root/bin/$1"
}

build_temporal() {
  # Built from hack/tools/temporal-cli, which pins a SQLite driver newer than the CLI's own (see its tools.go).
  local d="$cache/temporal-$TEMPORAL_VERSION-sqlite-$TEMPORAL_CLI_SQLITE_VERSION"
  if [ ! -x "$d/temporal" ]; then
    echo "building temporal $TEMPORAL_VERSION with modernc.org/sqlite $TEMPORAL_CLI_SQLITE_VERSION" >&2
    mkdir -p "$d.tmp"
    (cd "$root/hack/tools/temporal-cli" &&
      go build -trimpath -ldflags "$ldflags -X github.com/temporalio/cli/temporalcli.Version=${TEMPORAL_VERSION#v}" \
        -o "$d.tmp/temporal" github.com/temporalio/cli/cmd/temporal)
    rm -rf "$d" && mv "$d.tmp" "$d"
  fi
  link temporal "$d/temporal"
}

build_kwok() {
  local d="$cache/kwok-$KWOK_VERSION"
  if [ ! -x "$d/kwok" ]; then
    echo "building kwok $KWOK_VERSION" >&2
    mkdir -p "$d.tmp" && GOBIN="$d.tmp" go install -trimpath -ldflags "$ldflags" "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION"
    rm -rf "$d" && mv "$d.tmp" "$d"
  fi
  link kwok "$d/kwok"
}

build_workflowcheck() {
  local d="$cache/workflowcheck-$WORKFLOWCHECK_VERSION"
  if [ ! -x "$d/workflowcheck" ]; then
    echo "building workflowcheck $WORKFLOWCHECK_VERSION" >&2
    mkdir -p "$d.tmp" && GOBIN="$d.tmp" go install -trimpath -ldflags "$ldflags" "go.temporal.io/sdk/contrib/tools/workflowcheck@$WORKFLOWCHECK_VERSION"
    rm -rf "$d" && mv "$d.tmp" "$d"
  fi
  link workflowcheck "$d/workflowcheck"
}

build_etcd() {
  local d="$cache/etcd-$ETCD_VERSION"
  if [ ! -x "$d/etcd" ]; then
    echo "building etcd $ETCD_VERSION" >&2
    mkdir -p "$d.tmp" && (cd "$root/hack/tools/etcd" && go build -trimpath -ldflags "$ldflags" -o "$d.tmp/etcd" .)
    rm -rf "$d" && mv "$d.tmp" "$d"
  fi
  link etcd "$d/etcd"
}

build_registry() {
  local d="$cache/registry-$REGISTRY_VERSION"
  if [ ! -x "$d/registry" ]; then
    echo "building registry $REGISTRY_VERSION" >&2
    mkdir -p "$d.tmp" && (cd "$root/hack/tools/registry" && go build -trimpath -ldflags "$ldflags" -o "$d.tmp/registry" github.com/distribution/distribution/v3/cmd/registry)
    rm -rf "$d" && mv "$d.tmp" "$d"
  fi
  link registry "$d/registry"
}

build_temporal_server() {
  local d="$cache/temporal-server-$TEMPORAL_SERVER_VERSION"
  if [ ! -x "$d/temporal-server" ] || [ ! -x "$d/temporal-sql-tool" ] || [ ! -x "$d/temporal-entrypoint" ]; then
    echo "building temporal-server $TEMPORAL_SERVER_VERSION; about 4 minutes on 2 cores when cold" >&2
    mkdir -p "$d.tmp"
    (cd "$root/hack/tools/temporal-server" &&
      go build -trimpath -ldflags "$ldflags" -o "$d.tmp/temporal-server" go.temporal.io/server/cmd/server &&
      go build -trimpath -ldflags "$ldflags" -o "$d.tmp/temporal-sql-tool" go.temporal.io/server/cmd/tools/sql &&
      go build -trimpath -ldflags "$ldflags" -o "$d.tmp/temporal-entrypoint" ./entrypoint)
    rm -rf "$d" && mv "$d.tmp" "$d"
  fi
  link temporal-server "$d/temporal-server"
  link temporal-sql-tool "$d/temporal-sql-tool"
  link temporal-entrypoint "$d/temporal-entrypoint"
}

build_temporal_ui() {
  local d="$cache/temporal-ui-$TEMPORAL_UI_VERSION"
  if [ ! -x "$d/temporal-ui-server" ]; then
    echo "building temporal-ui-server $TEMPORAL_UI_VERSION" >&2
    mkdir -p "$d.tmp"
    (cd "$root/hack/tools/temporal-ui" &&
      go build -trimpath -ldflags "$ldflags" -o "$d.tmp/temporal-ui-server" github.com/temporalio/ui-server/v2/cmd/server)
    rm -rf "$d" && mv "$d.tmp" "$d"
  fi
  link temporal-ui-server "$d/temporal-ui-server"
}

# k8s_ldflags stamps the Kubernetes version: without it /version reports v0.0.0-master and Helm's
# kubeVersion checks misfire.
k8s_ldflags() {
  local minor=${K8S_VERSION#v1.}; minor=${minor%%.*}
  local ld="$ldflags" p
  for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ld="$ld -X $p.gitVersion=$K8S_VERSION -X $p.gitMajor=1 -X $p.gitMinor=$minor -X $p.gitTreeState=clean"
    ld="$ld -X $p.gitCommit=0000000000000000000000000000000000000000 -X $p.buildDate=2025-01-01T00:00:00Z"
  done
  echo "$ld"
}

build_k8s() {
  local d="$cache/kubernetes-$K8S_VERSION" cmds="kube-apiserver kube-controller-manager kube-scheduler"
  local missing=0 c
  for c in $cmds; do [ -x "$d/$c" ] || missing=1; done
  if [ $missing = 1 ]; then
    echo "building kubernetes $K8S_VERSION ($cmds); about 7 minutes on 2 cores when cold" >&2
    local ld; ld=$(k8s_ldflags)
    mkdir -p "$d.tmp"
    (cd "$root/hack/tools/k8s" && go build -trimpath -ldflags "$ld" -o "$d.tmp/" \
      k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager k8s.io/kubernetes/cmd/kube-scheduler)
    rm -rf "$d" && mv "$d.tmp" "$d"
  fi
  for c in $cmds; do link "$c" "$d/$c"; done
}

# kubectl: what Fleet's users drive the management cluster with, in the front door's tests (flotilla-controller).
# Its own cache entry, so adding it did not rebuild a warm control plane.
build_kubectl() {
  local d="$cache/kubectl-$K8S_VERSION"
  if [ ! -x "$d/kubectl" ]; then
    echo "building kubectl $K8S_VERSION; about 3 minutes on 2 cores when cold" >&2
    local ld; ld=$(k8s_ldflags)
    mkdir -p "$d.tmp"
    (cd "$root/hack/tools/k8s" && go build -trimpath -ldflags "$ld" -o "$d.tmp/kubectl" k8s.io/kubernetes/cmd/kubectl)
    rm -rf "$d" && mv "$d.tmp" "$d"
  fi
  link kubectl "$d/kubectl"
}

want=${*:-temporal etcd kubernetes kubectl kwok workflowcheck registry temporal-server temporal-ui}
for t in $want; do
  case $t in
    temporal) build_temporal ;;
    etcd) build_etcd ;;
    kubernetes) build_k8s ;;
    kubectl) build_kubectl ;;
    kwok) build_kwok ;;
    workflowcheck) build_workflowcheck ;;
    registry) build_registry ;;
    temporal-server) build_temporal_server ;;
    temporal-ui) build_temporal_ui ;;
    *) echo "unknown tool $t" >&2; exit 2 ;;
  esac
done
