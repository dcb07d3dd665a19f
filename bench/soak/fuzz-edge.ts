// The network-edge fuzzer: what a hostile or broken client can put on the
// TCP port and the CSI socket. Every case is one fresh connection, generated
// from a fixed seed by fast-check, so a failing case can be replayed.
//
//   h1-split    valid HTTP/1.1 requests written in two pieces, split at every byte
//   h2-split    a gRPC Probe over h2c, split at every byte (the sniffer must cope)
//   h1-random   Connect / gRPC-Web / plain requests with random bodies, grpc-timeout,
//               content types, methods and headers, correctly framed
//   h2-request  HTTP/2 streams with random and mutated header lists and bodies
//   h2-frames   random and mutated HTTP/2 frames after the preface
//
// The rule checked: a complete request gets a well-formed answer (an HTTP/1.1
// response that parses, or on HTTP/2 a HEADERS frame, a RST_STREAM or a
// GOAWAY) within the deadline; whatever the server writes is well-formed; and
// the server keeps answering Probe afterwards. Crashes are seen by the caller,
// which owns the process.
import net from "node:net";
import fc from "fast-check";
import { FLAG, FRAME, FrameReader, PREFACE, frame, headerBlock, type ServerFrame } from "./h2-wire.js";
import { requestPath } from "../../gateway/src/transport/request-path.js";
import { parseH1Response, type H1Response } from "./h1-wire.js";

export type FuzzKind = "h1-split" | "h2-split" | "h1-random" | "h2-request" | "h2-frames";
export const FUZZ_KINDS: readonly FuzzKind[] = ["h1-split", "h2-split", "h1-random", "h2-request", "h2-frames"];

export interface FuzzTarget {
  /** The HTTP port (h2c and HTTP/1.1). */
  host: string;
  port: number;
  /** The CSI unix socket (h2c only), fuzzed with the HTTP/2 kinds too. */
  socket?: string;
}

export interface FuzzViolation {
  kind: FuzzKind;
  what: "hung" | "closed-without-answer" | "malformed" | "unexpected" | "unresponsive";
  detail: string;
  /** The bytes sent (hex, first 512 bytes), to replay the case. */
  input: string;
}

export interface FuzzStats {
  cases: Record<string, number>;
  /** How cases ended: response, reset, goaway, close, ... by kind. */
  endings: Record<string, number>;
  violations: FuzzViolation[];
}

export interface FuzzOptions {
  seed: number;
  /** Random cases per random kind (h1-random, h2-request, h2-frames). */
  cases: number;
  /** How long a complete request may wait for its answer. */
  deadlineMs?: number;
  /** h1-split: compare each split answer with the unsplit one (status and body); off while readiness changes under the fuzzer (then any well-formed answer will do). */
  compareSplits?: boolean;
  /** Split positions per template: all of them (default) or this many, spread evenly. */
  splitPositions?: number;
  kinds?: readonly FuzzKind[];
  /** Stop early (the soak's clock). */
  until?: number;
}

// ---------- templates ----------

const PROBE_H2_HEADERS: Array<[string, string]> = [
  [":method", "POST"],
  [":scheme", "http"],
  [":path", "/csi.v1.Identity/Probe"],
  [":authority", "localhost"],
  ["content-type", "application/grpc"],
  ["te", "trailers"],
];
const EMPTY_GRPC_MESSAGE = Buffer.from([0, 0, 0, 0, 0]);

function h2Request(headers: ReadonlyArray<readonly [string | Uint8Array, string | Uint8Array]>, body: Buffer | null, stream = 1): Buffer {
  const hb = headerBlock(headers);
  if (body === null) return frame(FRAME.HEADERS, FLAG.END_HEADERS | FLAG.END_STREAM, stream, hb);
  return Buffer.concat([frame(FRAME.HEADERS, FLAG.END_HEADERS, stream, hb), frame(FRAME.DATA, FLAG.END_STREAM, stream, body)]);
}

export const H2_PROBE_BYTES = Buffer.concat([PREFACE, frame(FRAME.SETTINGS, 0, 0, Buffer.alloc(0)), h2Request(PROBE_H2_HEADERS, EMPTY_GRPC_MESSAGE)]);

function h1(method: string, path: string, headers: Record<string, string>, body = ""): Buffer {
  const b = Buffer.from(body, "latin1");
  const lines = [`${method} ${path} HTTP/1.1`, "Host: localhost", ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`)];
  if (method !== "GET" || b.length) lines.push(`Content-Length: ${b.length}`);
  return Buffer.concat([Buffer.from(lines.join("\r\n") + "\r\n\r\n", "latin1"), b]);
}

const H1_TEMPLATES: Buffer[] = [
  h1("GET", "/healthz", {}),
  h1("GET", "/readyz?verbose", {}),
  h1("GET", "/livez", { Accept: "application/json" }),
  h1("POST", "/csi.v1.Identity/Probe", { "Content-Type": "application/json" }, "{}"),
  h1("POST", "/grpc.health.v1.Health/Check", { "Content-Type": "application/json", "Connect-Protocol-Version": "1" }, '{"service":"readiness"}'),
  h1("POST", "/csi.v1.Identity/Probe", { "Content-Type": "application/grpc-web+proto", "X-Grpc-Web": "1" }, "\0\0\0\0\0"),
  // A server stream: answered once its first message is in, then left open.
  h1("POST", "/grpc.health.v1.Health/Watch", { "Content-Type": "application/grpc-web+proto", "X-Grpc-Web": "1" }, "\0\0\0\0\0"),
];

/** Calls whose answer is a stream that stays open by design. */
const SERVER_STREAMS = new Set(["/grpc.health.v1.Health/Watch"]);

/** The path a raw HTTP/1.1 request's target names, as the gateway reads it. */
function templatePath(req: Buffer): string {
  return requestPath(req.subarray(0, Math.max(0, req.indexOf("\r\n"))).toString("latin1").split(" ")[1]);
}

// ---------- generators ----------

const KNOWN_PATHS = [
  "/csi.v1.Identity/Probe",
  "/csi.v1.Identity/GetPluginInfo",
  "/csi.v1.Identity/GetPluginCapabilities",
  "/grpc.health.v1.Health/Check",
  "/grpc.health.v1.Health/Watch",
  "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo",
  "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo",
  "/csi.v1.Node/NodePublishVolume",
  "/csi.v1.Node/NodeGetVolumeStats",
  "/csi.v1.Node/NodeGetStorageHealth",
  "/csi.v1.Node/NodeGetVolumeHealth",
  "/csi.v1.Node/NodeGetCapabilities",
  "/healthz",
  "/readyz?verbose",
  "/livez?exclude=lnet-nets",
  "/metrics",
  "/csi.v1.Identity/",
  "/",
  "*",
];
const CONTENT_TYPES = [
  "application/grpc",
  "application/grpc+proto",
  "application/grpc+json",
  "application/grpc-web",
  "application/grpc-web+proto",
  "application/grpc-web+json",
  "application/grpc-web-text",
  "application/json",
  "application/json; charset=utf-8",
  "application/proto",
  "application/connect+json",
  "application/connect+proto",
  "text/plain",
  "",
];
const GRPC_TIMEOUTS = ["1S", "100m", "5H", "1M", "0n", "0S", "1u", "99999999H", "123456789S", "-1S", "1x", "S", "", " 1S", "1S ", "00000001m", "18446744073709551616n"];

const ENCODING_HEADERS = ["grpc-encoding", "content-encoding", "connect-content-encoding"];
const token = fc.stringMatching(/^[a-z][a-z0-9-]{0,15}$/);
const visible = fc.oneof({ weight: 6, arbitrary: fc.stringMatching(/^[\x21-\x7e]([\x20-\x7e]{0,38}[\x21-\x7e])?$/) }, { weight: 1, arbitrary: fc.stringMatching(/^[\x20-\x7e]{0,40}$/) });
const path = fc.oneof(fc.constantFrom(...KNOWN_PATHS), fc.stringMatching(/^\/[\x21-\x7e]{0,60}$/));
const contentType = fc.oneof({ weight: 4, arbitrary: fc.constantFrom(...CONTENT_TYPES) }, { weight: 1, arbitrary: visible });
const grpcTimeout = fc.oneof(fc.constantFrom(...GRPC_TIMEOUTS), fc.stringMatching(/^[0-9]{1,10}[HMSmun]$/), visible);

/** A gRPC / gRPC-Web / Connect body: random bytes, or a length-prefixed message whose flags and length may lie. */
const body = fc.oneof(
  fc.uint8Array({ maxLength: 200 }).map((b) => Buffer.from(b)),
  fc
    .record({ flags: fc.constantFrom(0, 1, 2, 0x80, 0xff), declared: fc.option(fc.nat({ max: 1 << 30 })), msg: fc.uint8Array({ maxLength: 64 }) })
    .map(({ flags, declared, msg }) => {
      const h = Buffer.alloc(5);
      h[0] = flags;
      h.writeUInt32BE(declared ?? msg.length, 1);
      return Buffer.concat([h, msg]);
    }),
  fc.constantFrom("{}", '{"service":"readiness"}', '{"service":', "null", "[]", '{"ready":true}', "\u0000").map((s) => Buffer.from(s)),
);

interface H1Case {
  method: string;
  path: string;
  headers: Array<[string, string]>;
  body: Buffer;
  chunked: number[] | null;
}

const h1Case: fc.Arbitrary<H1Case> = fc.record({
  method: fc.constantFrom("POST", "POST", "POST", "GET", "PUT", "DELETE", "OPTIONS", "HEAD", "PATCH"),
  path,
  headers: fc
    .record({
      ct: fc.option(contentType, { nil: undefined }),
      timeout: fc.option(grpcTimeout, { nil: undefined }),
      connectTimeout: fc.option(fc.oneof(fc.nat().map(String), visible), { nil: undefined }),
      cpv: fc.option(fc.constantFrom("1", "2", ""), { nil: undefined }),
      grpcWeb: fc.boolean(),
      encoding: fc.option(fc.constantFrom("gzip", "identity", "br", "zstd", "x"), { nil: undefined }),
      extra: fc.array(fc.tuple(token, visible), { maxLength: 4 }),
    })
    .map((h) => {
      const out: Array<[string, string]> = [];
      if (h.ct !== undefined) out.push(["Content-Type", h.ct]);
      if (h.timeout !== undefined) out.push(["grpc-timeout", h.timeout]);
      if (h.connectTimeout !== undefined) out.push(["Connect-Timeout-Ms", h.connectTimeout]);
      if (h.cpv !== undefined) out.push(["Connect-Protocol-Version", h.cpv]);
      if (h.grpcWeb) out.push(["X-Grpc-Web", "1"]);
      if (h.encoding !== undefined) out.push([ENCODING_HEADERS[h.encoding.length % ENCODING_HEADERS.length], h.encoding]);
      out.push(...h.extra);
      return out;
    }),
  body,
  chunked: fc.option(fc.array(fc.integer({ min: 1, max: 40 }), { minLength: 1, maxLength: 5 }), { nil: null }),
});

function encodeH1Case(c: H1Case): Buffer {
  const lines = [`${c.method} ${c.path} HTTP/1.1`, "Host: localhost", ...c.headers.map(([k, v]) => `${k}: ${v}`)];
  if (c.chunked) {
    lines.push("Transfer-Encoding: chunked");
    const pieces: Buffer[] = [];
    let off = 0;
    let i = 0;
    while (off < c.body.length) {
      const n = Math.min(c.chunked[i++ % c.chunked.length], c.body.length - off);
      pieces.push(Buffer.from(`${n.toString(16)}\r\n`), c.body.subarray(off, off + n), Buffer.from("\r\n"));
      off += n;
    }
    pieces.push(Buffer.from("0\r\n\r\n"));
    return Buffer.concat([Buffer.from(lines.join("\r\n") + "\r\n\r\n", "latin1"), ...pieces]);
  }
  lines.push(`Content-Length: ${c.body.length}`);
  return Buffer.concat([Buffer.from(lines.join("\r\n") + "\r\n\r\n", "latin1"), c.body]);
}

interface H2Case {
  requests: Array<{ headers: Array<[string | Uint8Array, string | Uint8Array]>; data: Buffer[]; endOnHeaders: boolean }>;
}

const h2HeaderList = fc
  .record({
    method: fc.option(fc.constantFrom("POST", "POST", "POST", "GET", "PUT", "CONNECT", "post", ""), { nil: undefined }),
    scheme: fc.option(fc.constantFrom("http", "https", "ftp"), { nil: undefined }),
    path: fc.option(fc.oneof(path, fc.constant("")), { nil: undefined }),
    authority: fc.option(fc.constantFrom("localhost", "", "a:1"), { nil: undefined }),
    ct: fc.option(contentType, { nil: undefined }),
    te: fc.option(fc.constantFrom("trailers", "trailers", "trailers", "trailers", "gzip", ""), { nil: undefined }),
    timeout: fc.option(grpcTimeout, { nil: undefined }),
    encoding: fc.option(fc.constantFrom("gzip", "identity", "deflate", "snappy", ""), { nil: undefined }),
    extra: fc.array(
      fc.oneof(
        { weight: 6, arbitrary: fc.tuple(token, visible) },
        // Names HTTP/2 forbids: upper case, connection-specific, pseudo after regular, empty.
        { weight: 1, arbitrary: fc.tuple(fc.constantFrom("Content-Type", "connection", "keep-alive", "transfer-encoding", "upgrade", ":path", ":status", ":bogus", ""), visible) },
        { weight: 1, arbitrary: fc.tuple(fc.uint8Array({ maxLength: 12 }), fc.uint8Array({ maxLength: 20 })) },
      ),
      { maxLength: 4 },
    ),
    shuffle: fc.integer({ min: 0, max: 7 }).map((n) => n === 0),
  })
  .map((h) => {
    const pseudo: Array<[string | Uint8Array, string | Uint8Array]> = [];
    if (h.method !== undefined) pseudo.push([":method", h.method]);
    if (h.scheme !== undefined) pseudo.push([":scheme", h.scheme]);
    if (h.path !== undefined) pseudo.push([":path", h.path]);
    if (h.authority !== undefined) pseudo.push([":authority", h.authority]);
    const regular: Array<[string | Uint8Array, string | Uint8Array]> = [];
    if (h.ct !== undefined) regular.push(["content-type", h.ct]);
    if (h.te !== undefined) regular.push(["te", h.te]);
    if (h.timeout !== undefined) regular.push(["grpc-timeout", h.timeout]);
    if (h.encoding !== undefined) regular.push(["grpc-encoding", h.encoding]);
    regular.push(...h.extra);
    return h.shuffle ? [...regular, ...pseudo] : [...pseudo, ...regular];
  });

const h2Case: fc.Arbitrary<H2Case> = fc.record({
  requests: fc.array(
    fc.record({
      headers: fc.oneof({ weight: 1, arbitrary: fc.constant(PROBE_H2_HEADERS as Array<[string, string]>) }, { weight: 4, arbitrary: h2HeaderList }),
      data: fc.array(body, { maxLength: 3 }),
      endOnHeaders: fc.boolean(),
    }),
    { minLength: 1, maxLength: 3 },
  ),
});

function encodeH2Case(c: H2Case): { bytes: Buffer; streams: number[] } {
  const parts: Buffer[] = [PREFACE, frame(FRAME.SETTINGS, 0, 0, Buffer.alloc(0))];
  const streams: number[] = [];
  c.requests.forEach((r, i) => {
    const id = 1 + 2 * i;
    streams.push(id);
    const hb = headerBlock(r.headers);
    const end = r.endOnHeaders || r.data.length === 0;
    parts.push(frame(FRAME.HEADERS, FLAG.END_HEADERS | (end ? FLAG.END_STREAM : 0), id, hb));
    if (!end) r.data.forEach((d, j) => parts.push(frame(FRAME.DATA, j === r.data.length - 1 ? FLAG.END_STREAM : 0, id, d)));
  });
  return { bytes: Buffer.concat(parts), streams };
}

type Mutation = { op: "flip" | "set" | "insert" | "delete"; at: number; byte: number } | { op: "truncate"; at: number };

export const h2FramesCase = fc.oneof(
  // Random frames after a valid preface and SETTINGS.
  fc
    .array(
      fc.record({
        type: fc.oneof(fc.integer({ min: 0, max: 9 }), fc.integer({ min: 0, max: 255 })),
        flags: fc.oneof(fc.constantFrom(0, 1, 4, 5, 8, 0x20, 0x25), fc.integer({ min: 0, max: 255 })),
        stream: fc.oneof(fc.constantFrom(0, 1, 2, 3, 5, 0x7fffffff), fc.nat()),
        payload: fc.uint8Array({ maxLength: 48 }),
        lie: fc.option(fc.integer({ min: 0, max: 64 }), { nil: undefined }),
      }),
      { minLength: 1, maxLength: 6 },
    )
    .map((frames) =>
      Buffer.concat([
        PREFACE,
        frame(FRAME.SETTINGS, 0, 0, Buffer.alloc(0)),
        ...frames.map((f) => frame(f.type, f.flags, f.stream, f.payload, f.lie === undefined ? undefined : Math.min(f.lie, f.payload.length + 8))),
      ]),
    ),
  // A valid Probe conversation with a few bytes changed, inserted, removed or cut off.
  fc
    .array(
      fc.oneof(
        fc.record({ op: fc.constantFrom("flip", "set", "insert", "delete"), at: fc.nat({ max: H2_PROBE_BYTES.length - 1 }), byte: fc.integer({ min: 0, max: 255 }) }),
        fc.record({ op: fc.constant("truncate"), at: fc.nat({ max: H2_PROBE_BYTES.length - 1 }) }),
      ) as fc.Arbitrary<Mutation>,
      { minLength: 1, maxLength: 4 },
    )
    .map((muts) => {
      let b = Buffer.from(H2_PROBE_BYTES);
      for (const m of muts) {
        const at = Math.min(m.at, Math.max(0, b.length - 1));
        if (m.op === "truncate") b = b.subarray(0, at);
        else if (m.op === "flip") b[at] ^= 1 << (m.byte & 7);
        else if (m.op === "set") b[at] = m.byte;
        else if (m.op === "insert") b = Buffer.concat([b.subarray(0, at), Buffer.from([m.byte]), b.subarray(at)]);
        else b = Buffer.concat([b.subarray(0, at), b.subarray(at + 1)]);
      }
      return b;
    }),
);

// ---------- running one case ----------

type Dial = { host: string; port: number } | { socket: string };

function dial(d: Dial): net.Socket {
  return "socket" in d ? net.connect(d.socket) : net.connect(d.port, d.host);
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const hex = (b: Buffer) => b.subarray(0, 512).toString("hex");

interface RawResult {
  data: Buffer;
  closed: boolean;
  error?: string;
}

/**
 * Writes `pieces` with `gapMs` between them and collects the reply until
 * `done(data)` says it is complete, the server closes, or `deadlineMs` passes
 * after the last write.
 */
function exchange(
  d: Dial,
  pieces: Buffer[],
  gapMs: number,
  deadlineMs: number,
  done: (data: Buffer, closed: boolean) => boolean,
  onData?: (send: (b: Buffer) => void, chunk: Buffer) => void,
): Promise<RawResult> {
  return new Promise((resolve) => {
    const sock = dial(d);
    const chunks: Buffer[] = [];
    let data: Buffer = Buffer.alloc(0);
    let finished = false;
    let timer: NodeJS.Timeout | undefined;
    // Replies (a SETTINGS ACK) wait until the request is fully written: one
    // slipped between two pieces would corrupt the very bytes under test.
    let writing = true;
    const queued: Buffer[] = [];
    const send = (b: Buffer) => {
      if (writing) queued.push(b);
      else if (!sock.destroyed) sock.write(b);
    };
    const finish = (closed: boolean, error?: string) => {
      if (finished) return;
      finished = true;
      if (timer) clearTimeout(timer);
      sock.destroy();
      resolve({ data, closed, error });
    };
    sock.on("error", (e) => finish(true, (e as NodeJS.ErrnoException).code ?? e.message));
    sock.on("close", () => finish(true));
    sock.on("data", (c: Buffer) => {
      chunks.push(c);
      data = chunks.length === 1 ? c : Buffer.concat(chunks);
      onData?.(send, c);
      if (done(data, false)) finish(false);
    });
    sock.on("connect", async () => {
      for (let i = 0; i < pieces.length && !finished; i++) {
        if (i > 0) await sleep(gapMs);
        if (!finished && !sock.destroyed) sock.write(pieces[i]);
      }
      writing = false;
      for (const b of queued.splice(0)) send(b);
      if (!finished) timer = setTimeout(() => finish(false, "deadline"), deadlineMs);
    });
  });
}

function h1Exchange(d: Dial, pieces: Buffer[], method: string, deadlineMs: number, serverStream = false, gapMs = 2) {
  return exchange(d, pieces, gapMs, deadlineMs, (data, closed) => parseH1Response(data, closed, method, serverStream).done);
}

const SETTINGS_ACK = frame(FRAME.SETTINGS, FLAG.ACK, 0, Buffer.alloc(0));

/** An h2 conversation: acknowledges SETTINGS, finishes once every stream in `streams` is answered or the connection is refused. */
/** `untilEnd`: a stream counts as answered at its END_STREAM (whole answer), else at its first HEADERS (a Watch never ends). */
async function h2Exchange(d: Dial, pieces: Buffer[], streams: number[], deadlineMs: number, untilEnd = false, gapMs = 2) {
  const reader = new FrameReader();
  const open = new Set(streams);
  let goaway = false;
  const answered = () => goaway || open.size === 0;
  const r = await exchange(
    d,
    pieces,
    gapMs,
    deadlineMs,
    () => (streams.length > 0 && answered()) || !!reader.malformed,
    (send, chunk) => {
      for (const f of reader.push(chunk)) {
        if (f.type === FRAME.SETTINGS && !(f.flags & FLAG.ACK)) send(SETTINGS_ACK);
        if (f.type === FRAME.GOAWAY) goaway = true;
        if (!open.has(f.stream)) continue;
        if (f.type === FRAME.RST_STREAM) open.delete(f.stream);
        else if ((f.type === FRAME.HEADERS || f.type === FRAME.DATA) && (!untilEnd || f.flags & FLAG.END_STREAM)) open.delete(f.stream);
      }
    },
  );
  return { ...r, reader, open, goaway };
}

function describeH1(r: H1Response): string {
  return `${r.status} ${r.headers["content-type"] ?? ""} ${r.body.subarray(0, 60).toString("latin1")}`;
}

// ---------- the fuzzer ----------

export class EdgeFuzzer {
  readonly stats: FuzzStats = { cases: {}, endings: {}, violations: [] };
  private readonly deadlineMs: number;

  constructor(private readonly target: FuzzTarget, private readonly opts: FuzzOptions) {
    this.deadlineMs = opts.deadlineMs ?? 5_000;
  }

  private count(kind: FuzzKind, ending: string): void {
    this.stats.cases[kind] = (this.stats.cases[kind] ?? 0) + 1;
    const k = `${kind}:${ending}`;
    this.stats.endings[k] = (this.stats.endings[k] ?? 0) + 1;
  }

  private violate(v: FuzzViolation): void {
    // Bounded: a broken edge must not turn the report into megabytes.
    if (this.stats.violations.length < 200) this.stats.violations.push(v);
    else this.stats.violations[199] = { ...v, detail: `${v.detail} (and more; list capped at 200)` };
  }

  private expired(): boolean {
    return this.opts.until !== undefined && Date.now() >= this.opts.until;
  }

  private tcp(): Dial {
    return { host: this.target.host, port: this.target.port };
  }

  private dials(): Dial[] {
    return this.target.socket ? [this.tcp(), { socket: this.target.socket }] : [this.tcp()];
  }

  /** Runs every kind once through (or until `until`). */
  async run(): Promise<FuzzStats> {
    const kinds = this.opts.kinds ?? FUZZ_KINDS;
    for (const kind of kinds) {
      if (this.expired()) break;
      if (kind === "h1-split") await this.h1Split();
      else if (kind === "h2-split") await this.h2Split();
      else if (kind === "h1-random") await this.h1Random();
      else if (kind === "h2-request") await this.h2Random();
      else await this.h2Frames();
      await this.control(kind);
    }
    return this.stats;
  }

  /** Probe still answers after a kind: the server survived and kept serving. */
  async control(kind: FuzzKind): Promise<void> {
    for (const d of this.dials()) {
      const r = await h2Exchange(d, [H2_PROBE_BYTES], [1], this.deadlineMs, true);
      const answered = r.reader.frames.some((f) => f.stream === 1 && f.type === FRAME.HEADERS);
      if (!answered) this.violate({ kind, what: "unresponsive", detail: `Probe after the ${kind} cases was not answered (${r.error ?? (r.closed ? "closed" : "no answer")})`, input: hex(H2_PROBE_BYTES) });
    }
  }

  private positions(len: number): number[] {
    const all = Array.from({ length: len - 1 }, (_, i) => i + 1);
    const n = this.opts.splitPositions;
    if (!n || n >= all.length) return all;
    return Array.from({ length: n }, (_, i) => all[Math.floor((i * all.length) / n)]);
  }

  async h1Split(): Promise<void> {
    for (const req of H1_TEMPLATES) {
      const method = req.subarray(0, req.indexOf(" ")).toString();
      const stream = SERVER_STREAMS.has(templatePath(req));
      const ref = await h1Exchange(this.tcp(), [req], method, this.deadlineMs, stream);
      const refParsed = parseH1Response(ref.data, ref.closed, method, stream);
      if (!refParsed.done || !("response" in refParsed)) {
        this.violate({ kind: "h1-split", what: "malformed", detail: `unsplit request: ${"malformed" in refParsed ? refParsed.malformed : "no answer"}`, input: hex(req) });
        continue;
      }
      for (const at of this.positions(req.length)) {
        if (this.expired()) return;
        const r = await h1Exchange(this.tcp(), [req.subarray(0, at), req.subarray(at)], method, this.deadlineMs, stream);
        const p = parseH1Response(r.data, r.closed, method, stream);
        if (!p.done) {
          this.count("h1-split", "hung");
          this.violate({ kind: "h1-split", what: "hung", detail: `split at ${at}: no complete answer within ${this.deadlineMs} ms`, input: hex(req) });
        } else if ("malformed" in p) {
          this.count("h1-split", p.malformed === "empty" ? "closed" : "malformed");
          this.violate({ kind: "h1-split", what: p.malformed === "empty" ? "closed-without-answer" : "malformed", detail: `split at ${at}: ${p.malformed}`, input: hex(req) });
        } else {
          this.count("h1-split", String(p.response.status));
          const same = !this.opts.compareSplits || (p.response.status === refParsed.response.status && p.response.body.equals(refParsed.response.body));
          if (!same) this.violate({ kind: "h1-split", what: "unexpected", detail: `split at ${at}: ${describeH1(p.response)} instead of ${describeH1(refParsed.response)}`, input: hex(req) });
        }
      }
    }
  }

  async h2Split(): Promise<void> {
    const req = H2_PROBE_BYTES;
    for (const d of this.dials()) {
      for (const at of this.positions(req.length)) {
        if (this.expired()) return;
        const r = await h2Exchange(d, [req.subarray(0, at), req.subarray(at)], [1], this.deadlineMs, true);
        this.judgeH2("h2-split", r, req, `split at ${at}`);
        const resp = r.reader.frames.find((f) => f.stream === 1 && f.type === FRAME.HEADERS);
        if (resp && r.open.size === 0) {
          // Probe's answer is one message: ready:true, ready:false or absent.
          const data = r.reader.frames.filter((f) => f.stream === 1 && f.type === FRAME.DATA).map((f) => f.payload);
          const total = Buffer.concat(data);
          if (total.length < 5 || total.length !== 5 + total.readUInt32BE(1)) {
            this.violate({ kind: "h2-split", what: "unexpected", detail: `split at ${at}: Probe answer body ${total.toString("hex")} is not one gRPC message`, input: hex(req) });
          }
        }
      }
    }
  }

  async h1Random(): Promise<void> {
    const cases = fc.sample(h1Case, { seed: this.opts.seed, numRuns: this.opts.cases });
    for (const c of cases) {
      if (this.expired()) return;
      const bytes = encodeH1Case(c);
      const stream = SERVER_STREAMS.has(c.path);
      const r = await h1Exchange(this.tcp(), [bytes], c.method, this.deadlineMs, stream);
      const p = parseH1Response(r.data, r.closed, c.method, stream);
      if (!p.done) {
        this.count("h1-random", "hung");
        this.violate({ kind: "h1-random", what: "hung", detail: `${c.method} ${c.path}: no complete answer within ${this.deadlineMs} ms`, input: hex(bytes) });
      } else if ("malformed" in p) {
        const closed = p.malformed === "empty";
        this.count("h1-random", closed ? "closed" : "malformed");
        this.violate({ kind: "h1-random", what: closed ? "closed-without-answer" : "malformed", detail: `${c.method} ${c.path}: ${p.malformed}${r.error ? ` (${r.error})` : ""}`, input: hex(bytes) });
      } else {
        this.count("h1-random", String(p.response.status));
        const v = checkH1Answer(c, p.response);
        if (v) this.violate({ kind: "h1-random", what: "unexpected", detail: `${c.method} ${c.path}: ${v}`, input: hex(bytes) });
      }
    }
  }

  async h2Random(): Promise<void> {
    const cases = fc.sample(h2Case, { seed: this.opts.seed + 1, numRuns: this.opts.cases });
    let i = 0;
    for (const c of cases) {
      if (this.expired()) return;
      const d = this.dials()[i++ % this.dials().length];
      const { bytes, streams } = encodeH2Case(c);
      const r = await h2Exchange(d, [bytes], streams, this.deadlineMs);
      this.judgeH2("h2-request", r, bytes, `${"socket" in d ? "unix" : "tcp"}, ${streams.length} stream(s)`);
    }
  }

  async h2Frames(): Promise<void> {
    const cases = fc.sample(h2FramesCase, { seed: this.opts.seed + 2, numRuns: this.opts.cases });
    let i = 0;
    for (const bytes of cases) {
      if (this.expired()) return;
      const d = this.dials()[i++ % this.dials().length];
      // No stream is owed an answer here (the frames may leave streams half
      // open legitimately): wait a short while, then judge what came back.
      const r = await exchange(d, [bytes], 0, 100, () => false, undefined);
      const kind = "h2-frames";
      if (r.data.subarray(0, 5).toString("latin1") === "HTTP/") {
        const p = parseH1Response(r.data, true, "GET");
        this.count(kind, "http1");
        if ("malformed" in p) this.violate({ kind, what: "malformed", detail: `HTTP/1.1 answer to a mangled preface: ${p.malformed}`, input: hex(bytes) });
        continue;
      }
      const reader = new FrameReader();
      reader.push(r.data);
      const ending = reader.frames.some((f) => f.type === FRAME.GOAWAY) ? "goaway" : r.closed ? "closed" : "open";
      this.count(kind, ending);
      if (reader.malformed) this.violate({ kind, what: "malformed", detail: reader.malformed, input: hex(bytes) });
      else if (r.closed && reader.pending > 0 && r.error === undefined) this.violate({ kind, what: "malformed", detail: `connection closed inside a frame (${reader.pending} bytes left)`, input: hex(bytes) });
    }
  }

  private judgeH2(kind: FuzzKind, r: Awaited<ReturnType<typeof h2Exchange>>, bytes: Buffer, where: string): void {
    if (r.reader.malformed) {
      this.count(kind, "malformed");
      this.violate({ kind, what: "malformed", detail: `${where}: ${r.reader.malformed}`, input: hex(bytes) });
      return;
    }
    if (r.goaway) return this.count(kind, "goaway");
    if (r.open.size === 0) {
      const resets = r.reader.frames.filter((f: ServerFrame) => f.type === FRAME.RST_STREAM).length;
      return this.count(kind, resets ? "reset" : "response");
    }
    if (r.closed) {
      this.count(kind, "closed");
      this.violate({ kind, what: "closed-without-answer", detail: `${where}: connection closed with stream(s) ${[...r.open].join(",")} unanswered and no GOAWAY${r.error ? ` (${r.error})` : ""}`, input: hex(bytes) });
      return;
    }
    this.count(kind, "hung");
    this.violate({ kind, what: "hung", detail: `${where}: stream(s) ${[...r.open].join(",")} unanswered after ${this.deadlineMs} ms`, input: hex(bytes) });
  }
}

/**
 * Protocol-level sanity of an answer to a random HTTP/1.1 request: a gRPC-Web
 * answer carries a grpc-status (header or trailer frame); a Connect error is
 * JSON with a code; a 2xx Connect unary answer to a non-GET is JSON or proto.
 */
function checkH1Answer(c: H1Case, r: H1Response): string | undefined {
  const ct = (r.headers["content-type"] ?? "").toLowerCase();
  if (ct.startsWith("application/grpc-web") && r.status === 200 && r.open) {
    // An open stream's first frame must be a message, not trailers.
    if (r.body[0] !== 0) return `gRPC-Web stream opened with frame flags 0x${r.body[0]!.toString(16)}: ${describeH1(r)}`;
  } else if (ct.startsWith("application/grpc-web") && r.status === 200) {
    const inHeader = r.headers["grpc-status"] !== undefined;
    const inTrailer = r.body.length > 0 && r.body.includes(Buffer.from("grpc-status"));
    if (!inHeader && !inTrailer) return `gRPC-Web answer without grpc-status: ${describeH1(r)}`;
  }
  if (ct.startsWith("application/json") && r.status >= 400 && c.method !== "HEAD" && r.body.length > 0) {
    try {
      const j = JSON.parse(r.body.toString("utf8")) as { code?: unknown };
      if (typeof j.code !== "string") return `Connect error without a code: ${describeH1(r)}`;
    } catch {
      return `JSON error body does not parse: ${describeH1(r)}`;
    }
  }
  return undefined;
}
