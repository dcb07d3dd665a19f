// A node-mode gateway (no driver behind it) on a fresh socket and a loopback
// port, answering the node health RPCs from a test implementation of the
// engine's health (helpers/scripted-health.ts).
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pino from "pino";
import { startGateway, type Gateway } from "../../src/gateway.js";
import { Metrics } from "../../src/observability/metrics.js";
import { parseEndpoint } from "../../src/transport/endpoint.js";
import { ScriptedReadiness } from "../gateway-mode-harness.js";
import type { ScriptedHealth } from "./scripted-health.js";

export async function startNodeModeGateway(health: ScriptedHealth, prefix: string): Promise<{ gw: Gateway; dir: string; socket: string; http: string }> {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  const socket = join(dir, "csi.sock");
  const gw = await startGateway({
    csiEndpoint: parseEndpoint(`unix://${socket}`),
    httpEndpoint: parseEndpoint("127.0.0.1:0"),
    identity: { driverName: "probegate.test", vendorVersion: "0.0.0", manifest: {}, capabilities: [] },
    readiness: new ScriptedReadiness(),
    logger: pino({ level: "silent" }),
    metrics: new Metrics({ processMetrics: false }),
    health: { view: health.view, registry: health.registry },
  });
  return { gw, dir, socket, http: gw.http!.address };
}
