#!/bin/sh
# Helm post-renderer for the gateway-mode examples: reads the chart's rendered
# manifests on stdin and writes them on stdout with the example's gateway
# component and plugin configuration applied (kustomize, nothing else).
#
#   Helm 3:  helm install aws-fsx-csi-driver aws-fsx-csi-driver/aws-fsx-csi-driver \
#              --namespace kube-system \
#              --post-renderer deploy/examples/helm-post-renderer.sh --post-renderer-args fsx
#
# EXAMPLE is one of azurelustre, fsx, gke-lustre, hpe-lustre, exascaler: its helm/kustomization.yaml
# sets the plugin ConfigMap's namespace and the probegate image. Nothing is
# written into the checkout: the pieces are copied to a private temporary directory.
set -eu

case "${1:-}" in
  azurelustre) component=azurelustre-gateway ;;
  fsx) component=fsx-gateway ;;
  gke-lustre) component=gke-lustre-gateway ;;
  hpe-lustre) component=hpe-lustre-gateway ;;
  exascaler) component=exascaler-gateway ;;
  *)
    echo "usage: $0 EXAMPLE   (azurelustre, fsx, gke-lustre, hpe-lustre or exascaler)" >&2
    exit 2
    ;;
esac

examples=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cp "$examples/$1/helm/kustomization.yaml" "$work/kustomization.yaml"
cp -R "$examples/$1/plugins.d" "$work/plugins.d"
cp -R "$examples/../kustomize/components/$component" "$work/component"
cat > "$work/helm-output.yaml"
# A standalone kustomize when $KUSTOMIZE names one (as deploy/test does), else kubectl's.
if [ -n "${KUSTOMIZE:-}" ]; then
  "$KUSTOMIZE" build "$work"
else
  kubectl kustomize "$work"
fi
