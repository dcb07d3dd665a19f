// A strict reader of tar archives and OCI image layouts, for tests: it unpacks
// what `plugin pack` writes as a container runtime would, and refuses what no
// plugin pack should hold (a path leaving the root, an absolute path, a link
// of either kind, a device), so a test can tell a hostile archive from ours.
import { createHash } from "node:crypto";
import { gunzipSync } from "node:zlib";

export interface TarFile {
  name: string;
  type: "file" | "dir";
  bytes: Uint8Array;
  mode: number;
  uid: number;
  gid: number;
  mtime: number;
  uname: string;
  gname: string;
}

export class UnsafeArchive extends Error {}

const field = (h: Buffer, off: number, len: number) => h.subarray(off, off + len).toString("utf8").replace(/\0.*$/s, "");
const num = (h: Buffer, off: number, len: number) => parseInt(field(h, off, len).trim() || "0", 8);

export function readTar(archive: Uint8Array): TarFile[] {
  const buf = Buffer.from(archive);
  const out: TarFile[] = [];
  for (let off = 0; off + 512 <= buf.length; ) {
    const h = buf.subarray(off, off + 512);
    if (h.every((b) => b === 0)) break;
    let sum = 0;
    for (let i = 0; i < 512; i++) sum += i >= 148 && i < 156 ? 32 : h[i]!;
    if (sum !== num(h, 148, 8)) throw new UnsafeArchive(`bad header checksum at ${off}`);
    const prefix = field(h, 345, 155);
    const name = (prefix ? `${prefix}/` : "") + field(h, 0, 100);
    const type = String.fromCharCode(h[156]!);
    const size = num(h, 124, 12);
    if (name.startsWith("/") || name.split("/").includes("..")) throw new UnsafeArchive(`entry ${name} leaves the archive's root`);
    if (type === "1" || type === "2") throw new UnsafeArchive(`entry ${name} is a ${type === "1" ? "hard" : "symbolic"} link to ${field(h, 157, 100)}`);
    if (type !== "0" && type !== "\0" && type !== "5") throw new UnsafeArchive(`entry ${name} has type ${JSON.stringify(type)}`);
    const bytes = new Uint8Array(buf.subarray(off + 512, off + 512 + size));
    out.push({ name, type: type === "5" ? "dir" : "file", bytes, mode: num(h, 100, 8), uid: num(h, 108, 8), gid: num(h, 116, 8), mtime: num(h, 136, 12), uname: field(h, 265, 32), gname: field(h, 297, 32) });
    off += 512 + Math.ceil(size / 512) * 512;
  }
  return out;
}

export interface OciImage {
  indexDigest: string;
  index: { manifests: Array<{ digest: string; platform?: { architecture: string; os: string } }>; annotations?: Record<string, string> };
  manifests: Array<{ architecture: string; manifest: { config: { digest: string }; layers: Array<{ mediaType: string; digest: string }>; annotations: Record<string, string> }; config: { architecture: string; os: string; config: { Labels: Record<string, string> }; rootfs: { diff_ids: string[] } } }>;
  /** The layer's files, as an image volume would show them. */
  files: TarFile[];
}

/** Reads an oci-archive: every blob checked against its digest, the nested index followed to each platform's manifest. */
export function readOciArchive(archive: Uint8Array): OciImage {
  const entries = new Map(readTar(archive).map((e) => [e.name, e.bytes]));
  const blob = (digest: string): Uint8Array => {
    const b = entries.get(`blobs/sha256/${digest.replace(/^sha256:/, "")}`);
    if (!b) throw new Error(`blob ${digest} missing`);
    const got = `sha256:${createHash("sha256").update(b).digest("hex")}`;
    if (got !== digest) throw new Error(`blob ${digest} holds ${got}`);
    return b;
  };
  const parse = (b: Uint8Array) => JSON.parse(Buffer.from(b).toString("utf8"));
  if (parse(entries.get("oci-layout")!).imageLayoutVersion !== "1.0.0") throw new Error("oci-layout");
  const top = parse(entries.get("index.json")!);
  const indexDigest = top.manifests[0].digest as string;
  const index = parse(blob(indexDigest));
  let layer: Uint8Array | null = null;
  const manifests = index.manifests.map((d: { digest: string; platform: { architecture: string } }) => {
    const manifest = parse(blob(d.digest));
    const config = parse(blob(manifest.config.digest));
    const l = blob(manifest.layers[0].digest);
    layer = manifest.layers[0].mediaType.endsWith("+gzip") ? gunzipSync(l) : l;
    const diff = `sha256:${createHash("sha256").update(layer!).digest("hex")}`;
    if (config.rootfs.diff_ids[0] !== diff) throw new Error(`diff_id ${config.rootfs.diff_ids[0]} is not ${diff}`);
    return { architecture: d.platform.architecture, manifest, config };
  });
  return { indexDigest, index, manifests, files: readTar(layer!) };
}
