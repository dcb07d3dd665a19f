// One CSI Probe over a brand-new HTTP/2 connection, as the livenessprobe sidecar
// does for every /healthz: dial, call Probe, hang up.
import http2 from "node:http2";
import net from "node:net";
import { PROBE_PATH, PROBE_REQUEST_FRAME, decodeProbeReady, parseGrpcFrames } from "../lib/grpc.js";

export type Dial = { socketPath: string } | { host: string; port: number };

export interface ProbeResult {
  ok: boolean;
  ready?: boolean;
  grpcStatus?: string;
  error?: string;
}

const HEADERS = {
  ":method": "POST",
  ":path": PROBE_PATH,
  ":scheme": "http",
  ":authority": "localhost",
  "content-type": "application/grpc",
  te: "trailers",
  "user-agent": "probegate-bench",
};

/** Calls Probe on a new connection; resolves (never rejects) with the outcome. */
export function probeNewConnection(dial: Dial, timeoutMs = 3000): Promise<ProbeResult> {
  return new Promise((resolve) => {
    let done = false;
    const sock = "socketPath" in dial ? net.connect(dial.socketPath) : net.connect(dial.port, dial.host);
    const session = http2.connect("http://localhost", { createConnection: () => sock });
    const finish = (r: ProbeResult) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      session.close();
      if (!r.ok) session.destroy();
      resolve(r);
    };
    const timer = setTimeout(() => finish({ ok: false, error: "timeout" }), timeoutMs);
    session.on("error", (e) => finish({ ok: false, error: `session: ${e.message}` }));
    sock.on("error", (e) => finish({ ok: false, error: `socket: ${e.message}` }));
    const req = session.request(HEADERS);
    const chunks: Buffer[] = [];
    let status: string | undefined;
    let httpStatus = 0;
    req.on("response", (h) => {
      httpStatus = Number(h[":status"]);
      if (h["grpc-status"] !== undefined) status = String(h["grpc-status"]); // trailers-only
    });
    req.on("trailers", (t) => {
      if (t["grpc-status"] !== undefined) status = String(t["grpc-status"]);
    });
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("error", (e) => finish({ ok: false, error: `stream: ${e.message}` }));
    req.on("end", () => {
      if (httpStatus !== 200) return finish({ ok: false, error: `http status ${httpStatus}` });
      if (status !== "0") return finish({ ok: false, grpcStatus: status, error: `grpc-status ${status}` });
      try {
        const msgs = parseGrpcFrames(Buffer.concat(chunks));
        if (msgs.length !== 1) return finish({ ok: false, grpcStatus: status, error: `${msgs.length} messages` });
        const ready = decodeProbeReady(msgs[0]);
        finish({ ok: true, grpcStatus: status, ready: ready ?? true });
      } catch (e) {
        finish({ ok: false, grpcStatus: status, error: (e as Error).message });
      }
    });
    req.end(PROBE_REQUEST_FRAME);
  });
}
