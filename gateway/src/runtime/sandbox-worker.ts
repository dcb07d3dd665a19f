// The code that runs inside the sandbox worker thread.
//
// It is shipped to the worker as source text (`sandboxWorkerSource`), not as
// a file path: the same code then runs from the compiled dist/ tree and from
// vitest's on-the-fly TypeScript, with no loader hooks. The function must
// therefore be self-contained: no imports, no closures over module scope —
// everything it needs arrives through `req` (the worker's CommonJS require).
//
// Which ABI a module speaks is the loader's answer, sent with "register"
// (abi/, WorkerAbi): the ABI's number picks the calling convention below and
// its entry points are what gets called.
//
// ABI v1: strings cross the boundary the way @assemblyscript/loader does it
// (`__new(bytes, STRING_ID)`, `__pin`/`__unpin`, UTF-16LE, byte length at
// ptr-4, class id at ptr-8), re-implemented here so every read from plugin
// memory is bounds-checked and length-capped before any byte is copied.
// ABI v2: UTF-8 byte buffers — the input goes into a `pg_alloc(len)` buffer,
// results come back packed as i64 `ptr | len << 32` and are bounds-checked
// and capped the same way, and `pg_reset()` frees the call's memory after
// the host has copied the result (plugins/ABI.md).

/* eslint-disable @typescript-eslint/no-explicit-any */
export function sandboxWorkerMain(req: (id: string) => any): void {
  const { parentPort } = req("node:worker_threads");
  const WA = (globalThis as any).WebAssembly;
  const STRING_ID = 2;
  const ABORT_TEXT_MAX = 512;
  const TRACE_TEXT_MAX = 256;
  const TRACES_PER_CALL = 8;
  const SEED = 0x5eed;
  // Set by the loader's memory.grow hook (wasm-grow-hook.ts) to the pages a grow was refused.
  const GROW_REFUSED = "__probegate_grow_refused";
  const PAGE = 64 * 1024;
  const MiB = 1024 * 1024;
  // Linear memory never shrinks: a call fed a large input (a 64-mount import
  // listing grows lustre-imports to 10.5 MiB) leaves its instance at its
  // high-water mark, resident for as long as the instance lives. Past this
  // size the instance is dropped after the call and its memory released, so
  // the next call starts from the module's initial memory. Checks keep nothing
  // across calls (plugins/ABI.md); a fresh instance costs ~0.1 ms, but
  // returning the memory takes a full collection of this worker's heap (a few
  // ms), which is why the size is not lower: up to ~16 mounts of 64 OSTs
  // (3.5 MiB) keep their instance and pay nothing per round.
  const KEEP_MEMORY_BYTES = 4 * MiB;

  interface Entry {
    module: any;
    instance: any;
    /** The loader's answer: the ABI the module was checked against, and its entry points. */
    abi: { abi: number; entryPoints: { manifest: string; check: string } };
    state: { abortMessage: string | null; traces: number; key: string };
  }
  const entries = new Map<string, Entry>();

  class PluginAbort extends Error {}

  function memoryOf(e: Entry): any {
    return (e.instance!.exports as any).memory;
  }

  /** Reads an AS string at ptr, or null if ptr doesn't point at one inside memory. */
  function readBounded(mem: any, ptr: number, maxChars: number): string | null {
    const buf = mem.buffer;
    ptr = ptr >>> 0;
    if (ptr < 8 || ptr % 4 !== 0 || ptr > buf.byteLength) return null;
    const header = new DataView(buf, ptr - 8, 8);
    if (header.getUint32(0, true) !== STRING_ID) return null;
    const size = header.getUint32(4, true);
    if (size % 2 !== 0 || ptr + size > buf.byteLength) return null;
    const take = Math.min(size, maxChars * 2);
    const text = new TextDecoder("utf-16le").decode(new Uint8Array(buf, ptr, take));
    return size > take ? `${text}…` : text;
  }

  /** UTF-8 text at [ptr, ptr+len) capped at maxBytes, or null when it lies outside memory. */
  function readUtf8(mem: any, ptr: number, len: number, maxBytes: number): string | null {
    const buf = mem.buffer;
    ptr = ptr >>> 0;
    len = len >>> 0;
    if (ptr + len > buf.byteLength) return null;
    const take = Math.min(len, maxBytes);
    const text = new TextDecoder("utf-8").decode(new Uint8Array(buf, ptr, take));
    return len > take ? `${text}…` : text;
  }

  function makeImportsV2(state: Entry["state"], getMemory: () => any) {
    return {
      probegate_v2: {
        log(ptr: number, len: number) {
          if (state.traces >= TRACES_PER_CALL) return;
          state.traces++;
          const mem = getMemory();
          const m = (mem ? readUtf8(mem, ptr, len, TRACE_TEXT_MAX * 4) : null) ?? "(unreadable)";
          parentPort.postMessage({ type: "trace", key: state.key, message: m.length > TRACE_TEXT_MAX ? `${m.slice(0, TRACE_TEXT_MAX)}…` : m });
        },
        abort(ptr: number, len: number) {
          const mem = getMemory();
          const m = mem ? readUtf8(mem, ptr, len, ABORT_TEXT_MAX * 4) : null;
          state.abortMessage = `abort: ${m === null || m.length === 0 ? "(no message)" : m.slice(0, ABORT_TEXT_MAX)}`;
          throw new PluginAbort(state.abortMessage);
        },
      },
    };
  }

  function makeImports(state: Entry["state"], getMemory: () => any) {
    return {
      env: {
        abort(msg: number, file: number, line: number, col: number) {
          const mem = getMemory();
          const m = mem ? readBounded(mem, msg, ABORT_TEXT_MAX) : null;
          const f = mem ? readBounded(mem, file, 128) : null;
          state.abortMessage = `abort: ${m ?? "(no message)"}${f ? ` at ${f}:${line >>> 0}:${col >>> 0}` : ""}`;
          throw new PluginAbort(state.abortMessage);
        },
        trace(msg: number, n: number, ...args: number[]) {
          if (state.traces >= TRACES_PER_CALL) return;
          state.traces++;
          const mem = getMemory();
          const m = (mem ? readBounded(mem, msg, TRACE_TEXT_MAX) : null) ?? "(unreadable)";
          const values = args.slice(0, Math.max(0, Math.min(5, n | 0))).map(String).join(", ");
          parentPort.postMessage({ type: "trace", key: state.key, message: values ? `${m} ${values}` : m });
        },
        seed() {
          return SEED;
        },
      },
    };
  }

  function instantiate(e: Entry): void {
    let instance: any = null;
    const getMemory = () => (instance ? (instance.exports as any).memory : null);
    const imports = CONVENTIONS[e.abi.abi]!.imports(e.state, getMemory);
    // Instantiation runs the module's start function (AS top-level code), so
    // it happens inside a call, under the caller's deadline.
    instance = new WA.Instance(e.module, imports as any);
    e.instance = instance;
  }

  function newString(e: Entry, s: string): number {
    const ex = e.instance!.exports as any;
    const ptr = ex.__new(s.length << 1, STRING_ID) >>> 0;
    // A native UTF-16LE copy: code units go over as they are (lone
    // surrogates included), about 40x faster than a charCodeAt loop on a
    // 100k-character `net show`. The buffer is read after __new, which may
    // have grown memory.
    Buffer.from(memoryOf(e).buffer, ptr, s.length << 1).write(s, "utf16le");
    return ptr;
  }

  type Fault = { ok: false; reason: string; message: string; released?: boolean };

  function readResult(e: Entry, ptr: number, maxOutputBytes: number): { ok: true; output: string } | Fault {
    const buf = memoryOf(e).buffer;
    ptr = ptr >>> 0;
    if (ptr < 8 || ptr % 4 !== 0 || ptr > buf.byteLength) {
      return { ok: false, reason: "PluginBadOutput", message: `result pointer ${ptr} is not a string` };
    }
    const header = new DataView(buf, ptr - 8, 8);
    if (header.getUint32(0, true) !== STRING_ID) {
      return { ok: false, reason: "PluginBadOutput", message: "result is not an AssemblyScript string" };
    }
    const size = header.getUint32(4, true);
    // Checked before a single character is copied: a hostile plugin may hand
    // back a 50 MB string, which must not land on the worker's JS heap.
    if (size > maxOutputBytes * 2) {
      return { ok: false, reason: "PluginOutputTooLarge", message: `output is ${size / 2} characters; the plugin output cap is ${maxOutputBytes} bytes (DEFAULTS.maxOutputBytes)` };
    }
    if (size % 2 !== 0 || ptr + size > buf.byteLength) {
      return { ok: false, reason: "PluginBadOutput", message: "result string runs outside plugin memory" };
    }
    const output = new TextDecoder("utf-16le").decode(new Uint8Array(buf, ptr, size));
    const utf8 = Buffer.byteLength(output, "utf8");
    if (utf8 > maxOutputBytes) {
      return { ok: false, reason: "PluginOutputTooLarge", message: `output is ${utf8} bytes; the plugin output cap is ${maxOutputBytes} bytes (DEFAULTS.maxOutputBytes)` };
    }
    return { ok: true, output };
  }

  /**
   * Reads a v2 result packed as i64 `ptr | len << 32`: the length is checked
   * against the output cap before a byte is copied, the range against memory,
   * and the bytes must be valid UTF-8.
   */
  function readPacked(e: Entry, packed: unknown, fn: string, maxOutputBytes: number): { ok: true; output: string } | Fault {
    if (typeof packed !== "bigint") {
      return { ok: false, reason: "PluginBadOutput", message: `${fn} returned ${typeof packed}; ABI v2 returns an i64 (ptr | len << 32)` };
    }
    const bits = BigInt.asUintN(64, packed);
    const ptr = Number(bits & 0xffffffffn);
    const len = Number(bits >> 32n);
    if (len > maxOutputBytes) {
      return { ok: false, reason: "PluginOutputTooLarge", message: `output is ${len} bytes; the plugin output cap is ${maxOutputBytes} bytes (DEFAULTS.maxOutputBytes)` };
    }
    const buf = memoryOf(e).buffer;
    if (ptr + len > buf.byteLength) {
      return { ok: false, reason: "PluginBadOutput", message: `${fn} result [${ptr}, ${ptr + len}) runs outside plugin memory (${buf.byteLength} bytes)` };
    }
    try {
      return { ok: true, output: new TextDecoder("utf-8", { fatal: true }).decode(new Uint8Array(buf, ptr, len)) };
    } catch {
      return { ok: false, reason: "PluginBadOutput", message: `${fn} result is not valid UTF-8` };
    }
  }

  function callV2(e: Entry, msg: any): { ok: true; output: string } | Fault {
    const ex = e.instance!.exports as any;
    const fn: string = e.abi.entryPoints[msg.fn as "manifest" | "check"];
    let packed: unknown;
    if (msg.fn === "manifest") {
      packed = ex[fn]();
    } else {
      const input = Buffer.from(msg.input, "utf8");
      const ptr = ex.pg_alloc(input.length) >>> 0;
      // Read after pg_alloc, which may have grown (and so replaced) the buffer.
      const buf = memoryOf(e).buffer;
      if (ptr === 0 || ptr + input.length > buf.byteLength) {
        return { ok: false, reason: "PluginBadOutput", message: `pg_alloc(${input.length}) returned ${ptr}, not a buffer inside plugin memory (${buf.byteLength} bytes)` };
      }
      input.copy(Buffer.from(buf, ptr, input.length));
      packed = ex[fn](ptr, input.length);
    }
    const result = readPacked(e, packed, fn, msg.maxOutputBytes);
    // The result is copied out: the arena goes back to empty for the next call.
    ex.pg_reset();
    return result;
  }

  function callV1(e: Entry, msg: any): { ok: true; output: string } | Fault {
    const ex = e.instance!.exports as any;
    const fn: string = e.abi.entryPoints[msg.fn as "manifest" | "check"];
    let pinned = 0;
    let ptr: number;
    if (msg.fn === "manifest") {
      ptr = ex[fn]();
    } else {
      pinned = newString(e, msg.input);
      ex.__pin(pinned);
      ptr = ex[fn](pinned);
    }
    const result = readResult(e, ptr, msg.maxOutputBytes);
    if (pinned) ex.__unpin(pinned);
    // The result is copied out: collect now, so a plugin built with the
    // minimal runtime (which frees nothing on its own) cannot grow per call.
    if (typeof ex.__collect === "function") ex.__collect();
    return result;
  }

  /**
   * Each ABI's calling convention, by ABI number: its host imports, how a
   * call crosses, and whether a bad result leaves the instance suspect (v2's
   * arena; a v1 bad result is only read, never written into).
   */
  const CONVENTIONS: Record<number, { imports: (state: Entry["state"], getMemory: () => any) => object; call: typeof callV1; badOutputResets: boolean }> = {
    1: { imports: makeImports, call: callV1, badOutputResets: false },
    2: { imports: makeImportsV2, call: callV2, badOutputResets: true },
  };

  function call(msg: any): { ok: true; output: string; released?: boolean } | Fault {
    const e = entries.get(msg.key);
    if (!e) return { ok: false, reason: "PluginUnloaded", message: "plugin is not loaded" };
    e.state.abortMessage = null;
    e.state.traces = 0;
    let growRefused: any = null;
    try {
      if (!e.instance) instantiate(e);
      const ex = e.instance!.exports as any;
      growRefused = ex[GROW_REFUSED] ?? null;
      if (growRefused) growRefused.value = 0;
      const convention = CONVENTIONS[e.abi.abi]!;
      const r = convention.call(e, msg);
      if (r.ok || !convention.badOutputResets) {
        if (memoryOf(e).buffer.byteLength <= KEEP_MEMORY_BYTES) return r;
        e.instance = null;
        return { ...r, released: true };
      }
      const refusedPages = growRefused ? growRefused.value >>> 0 : 0;
      const hadBytes = memoryOf(e).buffer.byteLength;
      // A module that handed back a bad buffer may be in any state: the next call gets a fresh instance.
      e.instance = null;
      // pg_alloc failing because the cap refused memory is a memory fault, not bad output.
      if (r.reason === "PluginBadOutput" && refusedPages > 0) return memoryLimit(msg, refusedPages, hadBytes, `Error: ${r.message.slice(0, ABORT_TEXT_MAX)}`);
      return r;
    } catch (err: any) {
      // A trapped AS instance may have a half-updated heap: start the next
      // call from a fresh instance.
      const message = e.state.abortMessage ?? `${err?.name ?? "Error"}: ${String(err?.message ?? err).slice(0, ABORT_TEXT_MAX)}`;
      const refusedPages = growRefused ? growRefused.value >>> 0 : 0;
      const hadBytes = e.instance ? memoryOf(e).buffer.byteLength : 0;
      e.instance = null;
      if (refusedPages > 0) return memoryLimit(msg, refusedPages, hadBytes, message);
      return { ok: false, reason: "PluginTrap", message };
    }
  }

  /**
   * The function that runs a full collection of this worker's heap (null:
   * not available). A dropped instance's memory is only returned when the
   * heap collects it, which a worker that is rarely called may not do for
   * minutes; it runs after the reply is sent, once no frame of the call still
   * holds the instance or the call's input.
   */
  const collect: (() => void) | null = (() => {
    try {
      const v8 = req("node:v8");
      const vm = req("node:vm");
      // V8 flags are process-wide, but --expose-gc only adds `gc` to contexts
      // made from now on: the one made here, nobody else's.
      v8.setFlagsFromString("--expose-gc");
      const gc = vm.runInNewContext("gc");
      v8.setFlagsFromString("--no-expose-gc");
      return typeof gc === "function" ? gc : null;
    } catch {
      return null;
    }
  })();

  /** The fault of a call that failed after the memory cap refused a grow (the grow hook's count). */
  function memoryLimit(msg: any, refusedPages: number, hadBytes: number, then: string): Fault {
    const mib = (bytes: number) => `${Math.round((bytes / MiB) * 10) / 10} MiB`;
    return {
      ok: false,
      reason: "PluginMemoryLimit",
      message:
        `the plugin asked to grow its memory by ${mib(refusedPages * PAGE)}, past its cap of ${msg.memoryMiB} MiB ` +
        `(it had ${mib(hadBytes)}); raise --plugin-memory if it really needs that much. It then trapped: ${then}`,
    };
  }

  parentPort.on("message", (msg: any) => {
    switch (msg.op) {
      case "register":
        entries.set(msg.key, {
          module: msg.module,
          instance: null,
          abi: msg.abi,
          state: { abortMessage: null, traces: 0, key: msg.key },
        });
        return;
      case "unregister":
        entries.delete(msg.key);
        return;
      case "call": {
        const r = call(msg);
        parentPort.postMessage({ type: "reply", id: msg.id, ...r });
        // In the next turn, once this message (and its input) is garbage too.
        if (r.released && collect) setImmediate(collect);
        return;
      }
    }
  });
}

/** Source text for `new Worker(…, { eval: true })`. */
export const sandboxWorkerSource = `(${sandboxWorkerMain.toString()})(require);`;
