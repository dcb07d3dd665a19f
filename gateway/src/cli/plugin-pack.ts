// `probegate plugin pack`: a plugin directory as an OCI image layout archive
// (oci-archive), for `skopeo copy --all oci-archive:FILE docker://…`, oras or
// crane to push, and for a pod to mount as an image volume (KEP-4639).
//
// Layout choices, each for a reason:
// - one layer whose files sit at its root: an image volume mounts the image's
//   root, so the mounted directory is directly a --plugins-dir;
// - an image index with a linux/amd64 and a linux/arm64 manifest over the same
//   layer: wasm runs on either, and a runtime pulling for a node checks the
//   platform of what it pulls; the index digest is the one to pin;
// - nothing that varies between runs: no timestamps (mtime 0, no "created"),
//   no owners, files by name; an uncompressed layer by default, so the digest
//   does not depend on the zlib inside the Node that packed it (--gzip trades
//   that for size: the same on one Node build, fixed header, no name, mtime 0).

import { createHash } from "node:crypto";
import { gzipSync, constants as zc } from "node:zlib";
import { writeTar, type TarEntry } from "../support/tar.js";
import type { DistDir } from "./plugin-dist.js";

export const MEDIA = {
  index: "application/vnd.oci.image.index.v1+json",
  manifest: "application/vnd.oci.image.manifest.v1+json",
  config: "application/vnd.oci.image.config.v1+json",
  layer: "application/vnd.oci.image.layer.v1.tar",
  layerGzip: "application/vnd.oci.image.layer.v1.tar+gzip",
} as const;

export const PACK_PLATFORMS = ["amd64", "arm64"] as const;

interface Descriptor {
  mediaType: string;
  digest: string;
  size: number;
  platform?: { architecture: string; os: string };
  annotations?: Record<string, string>;
}

export interface Pack {
  archive: Uint8Array;
  /** The image index's digest: what a manifest pins (registry/repo@DIGEST). */
  digest: string;
  annotations: Record<string, string>;
  files: string[];
}

const digestOf = (b: Uint8Array) => `sha256:${createHash("sha256").update(b).digest("hex")}`;
const json = (v: unknown) => Buffer.from(JSON.stringify(v), "utf8");

/** The annotations that say what the pack holds (also the image config's labels). */
export function packAnnotations(d: DistDir): Record<string, string> {
  const plugins = d.modules.map((m) => ({
    file: m.file,
    name: m.manifest.name,
    version: m.manifest.version,
    abi: m.manifest.abi,
    probe: m.manifest.probe,
    severity: m.manifest.severity,
    sources: [...new Set(m.manifest.sources)].sort(),
    sha256: m.sha256,
  }));
  const lock = d.lockFiles.find((f) => f.file === "plugins.lock");
  return {
    "org.opencontainers.image.title": "probegate plugins",
    "org.opencontainers.image.description": `probegate check plugins: ${plugins.map((p) => `${p.name}@${p.version}`).join(", ")}`,
    "io.probegate.plugins": plugins.map((p) => `${p.name}@${p.version}`).join(","),
    "io.probegate.plugins.abis": [...new Set(plugins.map((p) => p.abi))].sort().join(","),
    "io.probegate.plugins.sources": [...new Set(plugins.flatMap((p) => p.sources))].sort().join(","),
    "io.probegate.plugins.detail": JSON.stringify(plugins),
    ...(lock ? { "io.probegate.plugins.lock": `sha256:${lock.sha256}` } : {}),
  };
}

export function buildPack(d: DistDir, opts: { gzip?: boolean } = {}): Pack {
  const files = [...d.modules, ...d.configs, ...d.lockFiles].sort((a, b) => (a.file < b.file ? -1 : a.file > b.file ? 1 : 0));
  const tar = writeTar(files.map((f) => ({ name: f.file, bytes: f.bytes })));
  const layer = opts.gzip ? fixedGzip(tar) : tar;
  const annotations = packAnnotations(d);
  const blobs = new Map<string, Uint8Array>();
  const put = (bytes: Uint8Array, mediaType: string, extra: Partial<Descriptor> = {}): Descriptor => {
    const digest = digestOf(bytes);
    blobs.set(digest, bytes);
    return { mediaType, digest, size: bytes.length, ...extra };
  };
  const layerDesc = put(layer, opts.gzip ? MEDIA.layerGzip : MEDIA.layer);
  const manifests = PACK_PLATFORMS.map((architecture) => {
    const config = put(
      json({ architecture, os: "linux", config: { Labels: annotations }, rootfs: { type: "layers", diff_ids: [digestOf(tar)] } }),
      MEDIA.config,
    );
    const manifest = { schemaVersion: 2, mediaType: MEDIA.manifest, config, layers: [layerDesc], annotations };
    return put(json(manifest), MEDIA.manifest, { platform: { architecture, os: "linux" } });
  });
  const index = put(json({ schemaVersion: 2, mediaType: MEDIA.index, manifests, annotations }), MEDIA.index);
  const layout: TarEntry[] = [
    { name: "blobs/" },
    { name: "blobs/sha256/" },
    ...[...blobs.entries()].sort(([a], [b]) => (a < b ? -1 : 1)).map(([digest, bytes]) => ({ name: `blobs/sha256/${digest.slice("sha256:".length)}`, bytes })),
    { name: "index.json", bytes: json({ schemaVersion: 2, mediaType: MEDIA.index, manifests: [index] }) },
    { name: "oci-layout", bytes: json({ imageLayoutVersion: "1.0.0" }) },
  ];
  return { archive: writeTar(layout), digest: index.digest, annotations, files: files.map((f) => f.file) };
}

/**
 * gzip with a fixed header: no file name, mtime 0 (Node writes both so), and
 * the OS byte set to "unknown" rather than the packing machine's.
 */
function fixedGzip(bytes: Uint8Array): Uint8Array {
  const gz = gzipSync(bytes, { level: zc.Z_BEST_COMPRESSION });
  gz[9] = 0xff;
  return gz;
}
