#!/bin/sh
# Stage the default plugin set into the Kustomize base, where the
# probegate-plugins configMapGenerator reads it.
#   deploy/scripts/stage-plugins.sh                 # from dist/plugins (npm run build)
#   deploy/scripts/stage-plugins.sh DIR             # from any directory of .wasm files
#   deploy/scripts/stage-plugins.sh --image IMAGE   # from a built probegate image
set -eu
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
dest="$repo/deploy/kustomize/base/plugins"

if [ "${1:-}" = "--image" ]; then
  image=${2:?usage: stage-plugins.sh --image IMAGE}
  cid=$(docker create "$image")
  trap 'docker rm -f "$cid" >/dev/null' EXIT
  tmp=$(mktemp -d)
  docker cp "$cid:/etc/probegate/plugins/." "$tmp/"
  src=$tmp
else
  src=${1:-$repo/dist/plugins}
fi

set -- "$src"/*.wasm
if [ ! -e "$1" ]; then
  echo "stage-plugins: no .wasm files in $src (run npm run build first)" >&2
  exit 1
fi
# Volume checks (volume-*.wasm) belong to the gateway-mode overlay, the rest to the base.
gwdest="$repo/deploy/gateway-mode/plugins"
mkdir -p "$dest" "$gwdest"
rm -f "$dest"/*.wasm "$gwdest"/*.wasm
for f in "$@"; do
  case "$(basename "$f")" in
    volume-*) cp "$f" "$gwdest/" ;;
    *) cp "$f" "$dest/" ;;
  esac
done
total=$(cat "$dest"/*.wasm | wc -c)
echo "stage-plugins: $(ls "$dest"/*.wasm | wc -l) plugins, $total bytes -> $dest; volume plugins -> $gwdest"
# ConfigMap limit is 1 MiB; client-side `kubectl apply` also copies the object
# into an annotation limited to 256 KiB, so warn early.
if [ "$total" -gt 196608 ]; then
  echo "stage-plugins: warning: over 192 KiB; use kubectl apply --server-side (see deploy/README.md)" >&2
fi
