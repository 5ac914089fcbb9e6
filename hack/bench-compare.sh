#!/usr/bin/env bash
# Compares the working tree's Flotilla with BASE's on chosen benchmark experiments, interleaved (base, new,
# base, new, …) in one run: `make bench-compare BASE=<commit>`. BASE's flotilla-worker and flotilla-agent are
# built from `git archive` into a temporary folder beside the same tools; the working tree's benchmark
# harness drives both, so only the product differs. Nothing is written to the repository.
#
# Usage: hack/bench-compare.sh [--lenient] BASE [flotilla-bench flags…]
#   --lenient  a BASE that cannot be resolved or built is reported and skipped (exit 0): `make test` runs
#              the quick form against the last tag or HEAD~1, which a shallow clone may not have.
set -euo pipefail
# Hooks and `git bisect run` export GIT_DIR and its kin; they would point every git below elsewhere.
unset $(git rev-parse --local-env-vars) GIT_CEILING_DIRECTORIES GIT_NAMESPACE 2>/dev/null || true
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

lenient=0
if [ "${1:-}" = "--lenient" ]; then
  lenient=1
  shift
fi
base=${1:?usage: hack/bench-compare.sh [--lenient] BASE [flotilla-bench flags…]}
shift

skip() {
  if [ "$lenient" = 1 ]; then
    echo "bench-compare: skipped: $*" >&2
    exit 0
  fi
  echo "bench-compare: $*" >&2
  exit 1
}

commit=$(git rev-parse --verify --quiet "$base^{commit}") || skip "base $base is not a commit of this clone"
short=$(git rev-parse --short "$commit")
tmp=$(mktemp -d "${TMPDIR:-/tmp}/flotilla-bench-compare.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

mkdir -p "$tmp/src" "$tmp/bin"
git archive "$commit" | tar -x -C "$tmp/src"
echo "bench-compare: building $base ($short)" >&2
(
  cd "$tmp/src"
  export CGO_ENABLED=0
  go build -trimpath -o "$tmp/bin/flotilla-worker" ./worker
  if [ -d cmd/flotilla-agent ]; then go build -trimpath -o "$tmp/bin/flotilla-agent" ./cmd/flotilla-agent; fi
) || skip "base $base ($short) does not build"
for tool in temporal etcd kube-apiserver kube-controller-manager kube-scheduler kwok registry; do
  if [ -e "bin/$tool" ]; then ln -s "$(readlink -f "bin/$tool")" "$tmp/bin/$tool"; fi
done

name="$base ($short)"
case "$commit" in "$base"*) name=$short ;; esac
bin/flotilla-bench --compare-bin "$tmp/bin" --base-name "$name" --workdir "$tmp/work" "$@"
