// A gateway's own account of V8's memory, read from its /metrics (prom-client's
// default Node metrics): beside RSS it tells V8's heap from native growth.
import http from "node:http";

export interface V8Memory {
  heapUsed: number;
  /** Committed: what V8 holds from the OS for its heap. */
  heapTotal: number;
  /** Memory of JS objects kept outside the heap (Buffers, ArrayBuffers), as V8 is told of it. */
  external: number;
  /** Used bytes per heap space (old, new, code, large_object, ...). */
  spaces: Record<string, number>;
}

/** NaN for what the text does not carry. */
export function parseV8Metrics(body: string): V8Memory {
  const out: V8Memory = { heapUsed: NaN, heapTotal: NaN, external: NaN, spaces: {} };
  for (const line of body.split("\n")) {
    const m = /^([a-z_]+)(?:\{([^}]*)\})? ([0-9.e+-]+)$/.exec(line);
    if (!m) continue;
    const v = Number(m[3]);
    if (m[1] === "nodejs_heap_size_used_bytes") out.heapUsed = v;
    else if (m[1] === "nodejs_heap_size_total_bytes") out.heapTotal = v;
    else if (m[1] === "nodejs_external_memory_bytes") out.external = v;
    else if (m[1] === "nodejs_heap_space_size_used_bytes") {
      const space = /space="([^"]+)"/.exec(m[2] ?? "")?.[1];
      if (space) out.spaces[space] = v;
    }
  }
  return out;
}

/** GET /metrics on the gateway's HTTP port; "" when it does not answer in time. */
export function fetchMetrics(port: number, timeoutMs = 5_000): Promise<string> {
  return new Promise((resolve) => {
    const req = http.get({ host: "127.0.0.1", port, path: "/metrics", agent: false, timeout: timeoutMs }, (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (c: string) => (body += c));
      res.on("end", () => resolve(res.statusCode === 200 ? body : ""));
      res.on("error", () => resolve(""));
    });
    req.on("timeout", () => req.destroy());
    req.on("error", () => resolve(""));
  });
}
