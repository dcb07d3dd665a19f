#!/bin/sh
# Helm post-renderer for the gateway-mode examples: reads the chart's rendered
# manifests on stdin and writes them on stdout with the example's gateway
# component and plugin configuration applied (kustomize, nothing else).
#
#   Helm 3:  helm install aws-fsx-csi-driver aws-fsx-csi-driver/aws-fsx-csi-driver \
#              --namespace kube-system \
#              --post-renderer deploy/examples/helm-post-renderer.sh --post-renderer-args fsx
#
# EXAMPLE is one of fsx, gke-lustre, hpe-lustre, exascaler: its helm/kustomization.yaml
# names the component, the plugin ConfigMap's namespace and the probegate image.
set -eu

case "${1:-}" in
  fsx | gke-lustre | hpe-lustre | exascaler) ;;
  *)
    echo "usage: $0 EXAMPLE   (fsx, gke-lustre, hpe-lustre or exascaler)" >&2
    exit 2
    ;;
esac

example=$(cd "$(dirname "$0")/$1" && pwd)
# Inside the example, so the kustomization's relative paths to the component hold.
work=$(mktemp -d "$example/.helm-render.XXXXXX")
trap 'rm -rf "$work"' EXIT

cp "$example/helm/kustomization.yaml" "$work/kustomization.yaml"
cp -R "$example/plugins.d" "$work/plugins.d"
cat > "$work/helm-output.yaml"
# A standalone kustomize when $KUSTOMIZE names one (as deploy/test does), else kubectl's.
if [ -n "${KUSTOMIZE:-}" ]; then
  "$KUSTOMIZE" build "$work"
else
  kubectl kustomize "$work"
fi
