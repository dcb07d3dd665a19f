// The function types of a module's imports and exports, read from the binary.
//
// WebAssembly.Module.imports()/exports() name the kind of each entry but not
// its signature, and a JS host function accepts any arguments: an ABI v2
// module whose pg_check returned an i32, or whose log import took an i64,
// would instantiate and then fail in confusing ways on every call. Reading
// the type, import, function and export sections lets the loader refuse it
// up front, naming the signature it found. Only runs on modules that
// WebAssembly.compile accepted, so the layout is known to be well-formed; an
// encoding this reader does not know (GC type groups) leaves a function's
// signature unknown rather than guessed.

export interface FuncSig {
  params: string[];
  results: string[];
}

export interface ModuleSignatures {
  /** "module.name" → signature, for function imports. */
  imports: Map<string, FuncSig | null>;
  /** export name → signature, for function exports. */
  exports: Map<string, FuncSig | null>;
}

const VALTYPES: Record<number, string> = { 0x7f: "i32", 0x7e: "i64", 0x7d: "f32", 0x7c: "f64", 0x7b: "v128", 0x70: "funcref", 0x6f: "externref" };

class Unreadable extends Error {}

class Reader {
  constructor(
    readonly b: Uint8Array,
    public pos: number,
    readonly end: number,
  ) {}
  byte(): number {
    if (this.pos >= this.end) throw new Unreadable("unexpected end");
    return this.b[this.pos++]!;
  }
  u32(): number {
    let r = 0;
    for (let shift = 0; shift < 35; shift += 7) {
      const x = this.byte();
      r += (x & 0x7f) * 2 ** shift;
      if ((x & 0x80) === 0) return r;
    }
    throw new Unreadable("LEB128 too long");
  }
  name(): string {
    const n = this.u32();
    if (this.pos + n > this.end) throw new Unreadable("name runs past its section");
    const s = new TextDecoder().decode(this.b.subarray(this.pos, this.pos + n));
    this.pos += n;
    return s;
  }
  limits(): void {
    const flags = this.byte();
    this.u32();
    if (flags & 1) this.u32();
  }
}

export function formatSig(s: FuncSig | null): string {
  return s ? `(${s.params.join(", ")}) -> ${s.results.length === 0 ? "()" : s.results.join(", ")}` : "(unreadable signature)";
}

export function sameSig(a: FuncSig | null, b: FuncSig): boolean {
  return a !== null && a.params.join() === b.params.join() && a.results.join() === b.results.join();
}

/** Signatures of the function imports and exports of a module that compiled. */
export function readSignatures(bytes: Uint8Array): ModuleSignatures {
  const types: Array<FuncSig | null> = [];
  const funcTypes: number[] = []; // type index per function index (imports first)
  const imports = new Map<string, FuncSig | null>();
  const exportsRaw: Array<[string, number]> = [];
  let typesReadable = true;
  let pos = 8;
  while (pos < bytes.length) {
    const head = new Reader(bytes, pos, bytes.length);
    const id = head.byte();
    const size = head.u32();
    const r = new Reader(bytes, head.pos, head.pos + size);
    pos = head.pos + size;
    try {
      if (id === 1) {
        const n = r.u32();
        for (let i = 0; i < n; i++) {
          if (r.byte() !== 0x60) throw new Unreadable("not a plain function type");
          const params = Array.from({ length: r.u32() }, () => VALTYPES[r.byte()] ?? "?");
          const results = Array.from({ length: r.u32() }, () => VALTYPES[r.byte()] ?? "?");
          types.push({ params, results });
        }
      } else if (id === 2) {
        const n = r.u32();
        for (let i = 0; i < n; i++) {
          const id2 = `${r.name()}.${r.name()}`;
          const kind = r.byte();
          if (kind === 0) {
            const t = r.u32();
            funcTypes.push(t);
            imports.set(id2, types[t] ?? null);
          } else if (kind === 1) {
            r.byte();
            r.limits();
          } else if (kind === 2) r.limits();
          else if (kind === 3) {
            r.byte();
            r.byte();
          } else if (kind === 4) {
            r.byte();
            r.u32();
          } else throw new Unreadable(`import kind ${kind}`);
        }
      } else if (id === 3) {
        const n = r.u32();
        for (let i = 0; i < n; i++) funcTypes.push(r.u32());
      } else if (id === 7) {
        const n = r.u32();
        for (let i = 0; i < n; i++) {
          const name = r.name();
          const kind = r.byte();
          const index = r.u32();
          if (kind === 0) exportsRaw.push([name, index]);
        }
      }
    } catch (e) {
      if (!(e instanceof Unreadable)) throw e;
      if (id === 1) typesReadable = false;
      // Whatever this section held stays unknown; the others are still read.
    }
  }
  const sigOf = (fn: number): FuncSig | null => (typesReadable ? (types[funcTypes[fn] ?? -1] ?? null) : null);
  return { imports, exports: new Map(exportsRaw.map(([name, fn]) => [name, sigOf(fn)])) };
}
