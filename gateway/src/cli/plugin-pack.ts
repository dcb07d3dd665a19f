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
//   no owners, files by name, JSON keys in the order Go writes them;
// - the layer is gzip (a pusher would otherwise compress it, and the pushed
//   digest would not be the one printed here) made of stored deflate blocks by
//   default: its bytes depend on nothing but the files, where zlib's output
//   depends on the zlib build and even the CPU it runs on. --compression
//   deflate trades that for size (fixed header: no name, mtime 0).

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
  // Keys sorted, as Go's encoding/json writes a map: a tool that re-serializes
  // the index on copy (skopeo without --preserve-digests) writes the same bytes.
  return sortedKeys({
    "org.opencontainers.image.title": "probegate plugins",
    "org.opencontainers.image.description": `probegate check plugins: ${plugins.map((p) => `${p.name}@${p.version}`).join(", ")}`,
    "io.probegate.plugins": plugins.map((p) => `${p.name}@${p.version}`).join(","),
    "io.probegate.plugins.abis": [...new Set(plugins.map((p) => p.abi))].sort().join(","),
    "io.probegate.plugins.sources": [...new Set(plugins.flatMap((p) => p.sources))].sort().join(","),
    "io.probegate.plugins.detail": JSON.stringify(plugins),
    ...(lock ? { "io.probegate.plugins.lock": `sha256:${lock.sha256}` } : {}),
  });
}

const sortedKeys = (o: Record<string, string>): Record<string, string> => Object.fromEntries(Object.entries(o).sort(([a], [b]) => (a < b ? -1 : 1)));

export const COMPRESSIONS = ["stored", "deflate"] as const;
export type Compression = (typeof COMPRESSIONS)[number];

export function buildPack(d: DistDir, opts: { compression?: Compression } = {}): Pack {
  const files = [...d.modules, ...d.configs, ...d.lockFiles].sort((a, b) => (a.file < b.file ? -1 : a.file > b.file ? 1 : 0));
  const tar = writeTar(files.map((f) => ({ name: f.file, bytes: f.bytes })));
  const layer = opts.compression === "deflate" ? deflatedGzip(tar) : storedGzip(tar);
  const annotations = packAnnotations(d);
  const blobs = new Map<string, Uint8Array>();
  const put = (bytes: Uint8Array, mediaType: string, extra: Partial<Descriptor> = {}): Descriptor => {
    const digest = digestOf(bytes);
    blobs.set(digest, bytes);
    return { mediaType, digest, size: bytes.length, ...extra };
  };
  const layerDesc = put(layer, MEDIA.layerGzip);
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

// gzip header (RFC 1952): deflate, no flags, mtime 0, no extra flags, OS "unknown".
const GZIP_HEADER = [0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff];

function deflatedGzip(bytes: Uint8Array): Uint8Array {
  const gz = gzipSync(bytes, { level: zc.Z_BEST_COMPRESSION });
  // Node writes no name and mtime 0; the OS byte would name the packing machine's.
  gz[9] = 0xff;
  return gz;
}

/** gzip of stored (uncompressed) deflate blocks (RFC 1951 3.2.4): the same bytes everywhere. */
function storedGzip(bytes: Uint8Array): Uint8Array {
  const MAX = 0xffff;
  const blocks = Math.max(1, Math.ceil(bytes.length / MAX));
  const out = Buffer.alloc(GZIP_HEADER.length + bytes.length + blocks * 5 + 8);
  out.set(GZIP_HEADER, 0);
  let o = GZIP_HEADER.length;
  for (let b = 0; b < blocks; b++) {
    const chunk = bytes.subarray(b * MAX, Math.min(bytes.length, (b + 1) * MAX));
    out[o] = b === blocks - 1 ? 1 : 0;
    out.writeUInt16LE(chunk.length, o + 1);
    out.writeUInt16LE(~chunk.length & 0xffff, o + 3);
    out.set(chunk, o + 5);
    o += 5 + chunk.length;
  }
  out.writeUInt32LE(crc32(bytes), o);
  out.writeUInt32LE(bytes.length >>> 0, o + 4);
  return out;
}

const CRC_TABLE = Uint32Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});

function crc32(bytes: Uint8Array): number {
  let c = 0xffffffff;
  for (const b of bytes) c = CRC_TABLE[(c ^ b) & 0xff]! ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}
