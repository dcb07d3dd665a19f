// Hand-assembled WebAssembly modules for ABI v2 tests: a handful of bytes per
// module, built in the test (no wabt, no compiler), so each hostile shape is
// exactly what its name says and nothing else.
import { encodeU32 as leb } from "../../src/runtime/wasm-binary.js";

export type ValType = "i32" | "i64";
const VT: Record<ValType, number> = { i32: 0x7f, i64: 0x7e };

export interface Func {
  params: ValType[];
  results: ValType[];
  /** Body instructions (without locals and the final `end`). */
  code: number[];
  locals?: ValType[];
  export?: string;
}

export interface ModuleSpec {
  imports?: Array<{ module: string; name: string; params: ValType[]; results: ValType[] }>;
  funcs: Func[];
  /** Initial pages; the memory is exported as "memory" unless memoryExport is false. */
  memoryPages?: number;
  memoryExport?: boolean;
  /** Data segments at fixed addresses. */
  data?: Array<{ at: number; bytes: Uint8Array }>;
}

function sleb(v: bigint): number[] {
  const out: number[] = [];
  for (;;) {
    const b = Number(v & 0x7fn);
    v >>= 7n;
    const done = (v === 0n && (b & 0x40) === 0) || (v === -1n && (b & 0x40) !== 0);
    out.push(done ? b : b | 0x80);
    if (done) return out;
  }
}

/** Instruction helpers (opcodes from the core spec). */
export const op = {
  i32: (v: number) => [0x41, ...sleb(BigInt(v | 0))],
  i64: (v: bigint) => [0x42, ...sleb(BigInt.asIntN(64, v))],
  localGet: (i: number) => [0x20, ...leb(i)],
  call: (i: number) => [0x10, ...leb(i)],
  unreachable: [0x00],
  drop: [0x1a],
  /** loop (empty block type) … br 0 end: spins forever. */
  spin: [0x03, 0x40, 0x0c, 0x00, 0x0b],
  memoryGrow: [0x40, 0x00],
  i32Eq: [0x46],
  /** if (empty) … end */
  ifThen: (body: number[]) => [0x04, 0x40, ...body, 0x0b],
  loop: (body: number[]) => [0x03, 0x40, ...body, 0x0b],
  br: (depth: number) => [0x0c, ...leb(depth)],
};

/** `ptr | len << 32`, the packing of ABI v2 results. */
export function packed(ptr: number, len: number): bigint {
  return BigInt(ptr >>> 0) | (BigInt(len >>> 0) << 32n);
}

function vec(items: number[][]): number[] {
  return [...leb(items.length), ...items.flat()];
}
function section(id: number, body: number[]): number[] {
  return [id, ...leb(body.length), ...body];
}
function name(s: string): number[] {
  const b = [...new TextEncoder().encode(s)];
  return [...leb(b.length), ...b];
}

export function assemble(spec: ModuleSpec): Uint8Array {
  const imports = spec.imports ?? [];
  const sigs: string[] = [];
  const typeOf = (params: ValType[], results: ValType[]) => {
    const key = `${params.join(",")}>${results.join(",")}`;
    let i = sigs.indexOf(key);
    if (i < 0) i = sigs.push(key) - 1;
    return i;
  };
  const importIdx = imports.map((i) => typeOf(i.params, i.results));
  const funcIdx = spec.funcs.map((f) => typeOf(f.params, f.results));
  const types = sigs.map((k) => {
    const [p, r] = k.split(">") as [string, string];
    const list = (s: string) => (s ? s.split(",").map((t) => VT[t as ValType]) : []);
    return [0x60, ...leb(list(p).length), ...list(p), ...leb(list(r).length), ...list(r)];
  });
  const out: number[] = [0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00];
  out.push(...section(1, vec(types)));
  if (imports.length) out.push(...section(2, vec(imports.map((im, k) => [...name(im.module), ...name(im.name), 0x00, ...leb(importIdx[k]!)]))));
  out.push(...section(3, vec(funcIdx.map((t) => leb(t)))));
  out.push(...section(5, vec([[0x00, ...leb(spec.memoryPages ?? 1)]])));
  const exps: number[][] = [];
  if (spec.memoryExport !== false) exps.push([...name("memory"), 0x02, 0x00]);
  spec.funcs.forEach((f, k) => {
    if (f.export) exps.push([...name(f.export), 0x00, ...leb(imports.length + k)]);
  });
  out.push(...section(7, vec(exps)));
  out.push(
    ...section(
      10,
      vec(
        spec.funcs.map((f) => {
          const locals = (f.locals ?? []).map((t) => [0x01, VT[t]]);
          const body = [...vec(locals), ...f.code, 0x0b];
          return [...leb(body.length), ...body];
        }),
      ),
    ),
  );
  if (spec.data?.length) {
    out.push(...section(11, vec(spec.data.map((d) => [0x00, ...op.i32(d.at), 0x0b, ...leb(d.bytes.length), ...d.bytes]))));
  }
  return Uint8Array.from(out);
}

const MANIFEST_AT = 1024;
const OUTPUT_AT = 8192;
const INPUT_AT = 16384;

export interface V2Options {
  /** The manifest JSON pg_manifest returns (default: a valid abi 2 manifest named `name`). */
  manifest?: string;
  /** pg_check's body; default: return `output`. */
  check?: number[];
  /** The bytes a default pg_check returns. */
  output?: string | Uint8Array;
  /** Replace or drop entry points, or add some. */
  funcs?: (base: Func[]) => Func[];
  imports?: ModuleSpec["imports"];
  memoryPages?: number;
}

/**
 * A valid ABI v2 module whose pg_check returns a fixed output from a data
 * segment, with hooks to make it hostile in exactly one way.
 */
export function v2Module(pluginName: string, opts: V2Options = {}): Uint8Array {
  const manifest = new TextEncoder().encode(
    opts.manifest ?? JSON.stringify({ abi: 2, name: pluginName, version: "1.0.0", sources: [], modes: ["node"] }),
  );
  const output =
    typeof opts.output === "string" || opts.output === undefined
      ? new TextEncoder().encode(opts.output ?? JSON.stringify({ status: "pass", reason: "Ok", message: `${pluginName} ok` }))
      : opts.output;
  const base: Func[] = [
    { export: "pg_manifest", params: [], results: ["i64"], code: op.i64(packed(MANIFEST_AT, manifest.length)) },
    { export: "pg_check", params: ["i32", "i32"], results: ["i64"], code: opts.check ?? op.i64(packed(OUTPUT_AT, output.length)) },
    { export: "pg_alloc", params: ["i32"], results: ["i32"], code: op.i32(INPUT_AT) },
    { export: "pg_reset", params: [], results: [], code: [] },
  ];
  return assemble({
    imports: opts.imports,
    funcs: opts.funcs ? opts.funcs(base) : base,
    memoryPages: opts.memoryPages ?? 2,
    data: [
      { at: MANIFEST_AT, bytes: manifest },
      { at: OUTPUT_AT, bytes: output },
    ],
  });
}
