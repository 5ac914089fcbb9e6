#!/usr/bin/env bash
# Builds, without pulling anything, the images that tests/compose/images.yml puts in place of those
# docker-compose.yml names: Flotilla's from the binaries in bin/ (make build), the Temporal server, its
# admin tools and Web UI from the binaries hack/build-tools.sh builds off the Go module proxy, and
# PostgreSQL 15 from this machine's Debian packages. Each is tagged flotilla-test/<name>:<tag>.
#
#   hack/images/build.sh [name...]    # names: flotilla postgres temporal-server temporal-admin-tools temporal-ui
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
bin=${FLOTILLA_BIN:-$root/bin}
images=$root/hack/images
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

need() {
  local f
  for f; do
    if [ ! -e "$f" ]; then
      echo "hack/images/build.sh: $f is missing (make build tools)" >&2
      exit 1
    fi
  done
}

# put <rootfs> <source> [<destination>]: a file into the image's tree, following symlinks.
put() {
  install -D -m "$(stat -Lc %a "$2")" "$(readlink -f "$2")" "$1${3:-$2}"
}

# put_dynamic <rootfs> <binary>...: each binary at its own path, with the shared libraries it loads.
put_dynamic() {
  local rootfs=$1 f lib
  shift
  for f; do
    [ -e "$rootfs$f" ] || put "$rootfs" "$f"
    for lib in $(ldd "$f" 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}'); do
      [ -e "$rootfs$lib" ] || install -D -m 755 "$(readlink -f "$lib")" "$rootfs$lib"
    done
  done
}

users() { # users <rootfs> <name> <uid>: /etc/passwd and /etc/group naming root and one user
  mkdir -p "$1/etc" "$1/tmp"
  chmod 1777 "$1/tmp"
  printf 'root:x:0:0:root:/:/sbin/nologin\n%s:x:%s:%s:%s:/tmp:/sbin/nologin\n' "$2" "$3" "$3" "$2" > "$1/etc/passwd"
  printf 'root:x:0:\n%s:x:%s:\n' "$2" "$3" > "$1/etc/group"
}

build() { # build <name> <context>
  local tag=flotilla-test/$1:${FLOTILLA_TEST_IMAGE_TAG:-test}
  local before after
  before=$(docker image inspect -f '{{.Id}}' "$tag" 2>/dev/null || true)
  echo "building $tag" >&2
  if ! docker build -q -t "$tag" "$2" > "$work/build.log" 2>&1; then
    cat "$work/build.log" >&2
    return 1
  fi
  # The image this one replaces would stay behind untagged, a few hundred MB per run.
  after=$(docker image inspect -f '{{.Id}}' "$tag")
  if [ -n "$before" ] && [ "$before" != "$after" ]; then
    docker image rm "$before" >/dev/null 2>&1 || true
  fi
}

flotilla() {
  need "$bin/flotilla-worker" "$bin/flotilla" "$bin/flotilla-agent"
  local c=$work/flotilla
  mkdir -p "$c/bin" "$c/empty"
  cp "$images/flotilla/"{Dockerfile,passwd,group} "$c/"
  cp -L "$bin/flotilla-worker" "$bin/flotilla" "$bin/flotilla-agent" "$c/bin/"
  cp -L /etc/ssl/certs/ca-certificates.crt "$c/ca-certificates.crt"
  build flotilla "$c"
}

postgres() {
  local pg=/usr/lib/postgresql/15 c=$work/postgres f
  need "$pg/bin/postgres" "$pg/bin/initdb" /usr/share/postgresql/15
  local r=$c/rootfs
  mkdir -p "$r" "$c/owned"
  chmod 700 "$c/owned"
  cp "$images/postgres/"{Dockerfile,docker-entrypoint.sh} "$c/"
  users "$r" postgres 999
  for f in "$pg"/bin/*; do put_dynamic "$r" "$f"; done
  for f in "$pg"/lib/*.so; do put_dynamic "$r" "$f"; done
  mkdir -p "$r/usr/share/postgresql"
  cp -rL /usr/share/postgresql/15 "$r/usr/share/postgresql/15"
  cp -rL /usr/share/zoneinfo "$r/usr/share/zoneinfo"
  put_dynamic "$r" /bin/sh
  build postgres "$c"
}

temporal_server() {
  need "$bin/temporal-server" "$bin/temporal-entrypoint"
  local c=$work/temporal-server
  mkdir -p "$c/rootfs/usr/local/bin"
  cp "$images/temporal-server/Dockerfile" "$c/"
  users "$c/rootfs" temporal 1000
  mkdir -p "$c/rootfs/etc/temporal"
  cp -L "$bin/temporal-server" "$bin/temporal-entrypoint" "$c/rootfs/usr/local/bin/"
  build temporal-server "$c"
}

temporal_admin_tools() {
  need "$bin/temporal-sql-tool" "$bin/temporal"
  local c=$work/temporal-admin-tools
  mkdir -p "$c/rootfs/usr/local/bin"
  cp "$images/temporal-admin-tools/Dockerfile" "$c/"
  users "$c/rootfs" temporal 1000
  cp -L "$bin/temporal-sql-tool" "$bin/temporal" "$c/rootfs/usr/local/bin/"
  put_dynamic "$c/rootfs" /bin/sh "$(command -v sleep)"
  build temporal-admin-tools "$c"
}

temporal_ui() {
  need "$bin/temporal-ui-server"
  local c=$work/temporal-ui mod
  mod=$(cd "$root/hack/tools/temporal-ui" && go list -m -f '{{.Dir}}' github.com/temporalio/ui-server/v2)
  mkdir -p "$c/rootfs/opt/temporal-ui/config"
  cp "$images/temporal-ui/Dockerfile" "$c/"
  users "$c/rootfs" temporal 1000
  cp -L "$bin/temporal-ui-server" "$c/rootfs/opt/temporal-ui/ui-server"
  cp "$mod/config/docker.yaml" "$c/rootfs/opt/temporal-ui/config/docker.yaml"
  chmod u+w "$c/rootfs/opt/temporal-ui/config/docker.yaml"
  build temporal-ui "$c"
}

for name in ${*:-flotilla postgres temporal-server temporal-admin-tools temporal-ui}; do
  case $name in
    flotilla) flotilla ;;
    postgres) postgres ;;
    temporal-server) temporal_server ;;
    temporal-admin-tools) temporal_admin_tools ;;
    temporal-ui) temporal_ui ;;
    *) echo "hack/images/build.sh: unknown image $name" >&2; exit 2 ;;
  esac
done
