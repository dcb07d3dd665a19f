// The soak's Probe burst as the memory benches (flood-rss.ts, growth.ts) replay it:
// 64 closed-loop Probes over 4 kept TCP connections and 16 closed-loop Probes on
// new unix-socket connections, for `ms`.
import { PROBE_PATH } from "../lib/grpc.js";
import type { GatewayProc } from "./gateway-proc.js";
import { connectSession, grpcUnary } from "./grpc-call.js";

export async function probeBurst(g: GatewayProc, ms: number): Promise<void> {
  const until = Date.now() + ms;
  const sessions = Array.from({ length: 4 }, () => connectSession({ host: "127.0.0.1", port: g.port }));
  const loop = async (call: () => Promise<unknown>) => {
    while (Date.now() < until) await call();
  };
  await Promise.all([
    ...Array.from({ length: 64 }, (_, i) => loop(() => grpcUnary(sessions[i % 4]!, PROBE_PATH, new Uint8Array(), { timeoutMs: 3000, capMs: 30_000 }))),
    ...Array.from({ length: 16 }, () => loop(() => grpcUnary({ socketPath: g.spec.socket }, PROBE_PATH, new Uint8Array(), { timeoutMs: 3000, capMs: 30_000 }))),
  ]);
  for (const s of sessions) s.destroy();
}
