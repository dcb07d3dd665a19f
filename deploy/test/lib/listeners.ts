import { expect } from "vitest";
import { flagsOf } from "./workloads.js";

/**
 * The listener conventions every probegate container follows (docs/serving.md, "What
 * it serves"; docs/deploy.md, "What gets deployed"): on the host network the probe
 * listener binds 127.0.0.1 and every HTTP probe on it sets host: 127.0.0.1 (a
 * gRPC probe has no host field, so there are none); on the pod network it
 * binds $(POD_IP). /metrics has its own listener on $(POD_IP), the pg-metrics
 * port, and the pod template the label the PodMonitor selects.
 */
export function expectProbegateListeners(template: any, c: any, want: { probePort: number; metricsPort: number }): void {
  const hostNetwork = template.spec.hostNetwork === true;
  const flags = flagsOf(c.args);
  expect(flags.get("http-endpoint")).toBe(`${hostNetwork ? "127.0.0.1" : "$(POD_IP)"}:${want.probePort}`);
  expect(flags.get("metrics-endpoint")).toBe(`$(POD_IP):${want.metricsPort}`);
  expect(flags.has("readyz-detail-remote")).toBe(false);
  const podIP = (c.env ?? []).find((e: any) => e.name === "POD_IP");
  expect(podIP?.valueFrom?.fieldRef?.fieldPath).toBe("status.podIP");
  const metricsPort = (c.ports ?? []).find((p: any) => p.name === "pg-metrics");
  expect(metricsPort?.containerPort).toBe(want.metricsPort);
  const probePort = (c.ports ?? []).find((p: any) => p.containerPort === want.probePort);
  expect(probePort, "the probe port is declared").toBeTruthy();
  expect(template.metadata.labels["probegate.io/scrape"]).toBe("true");
  const ann = template.metadata.annotations ?? {};
  if ("prometheus.io/port" in ann) expect(ann["prometheus.io/port"]).toBe(String(want.metricsPort));
  for (const kind of ["startupProbe", "readinessProbe", "livenessProbe"]) {
    const probe = c[kind];
    expect(probe?.grpc, `${kind}: no gRPC probe (it dials the pod IP)`).toBeUndefined();
    expect([probePort.name, want.probePort]).toContain(probe.httpGet.port);
    if (hostNetwork) expect(probe.httpGet.host, kind).toBe("127.0.0.1");
    else expect(probe.httpGet.host, kind).toBeUndefined();
  }
  expect(c.startupProbe.httpGet.path).toBe("/livez");
  expect(c.livenessProbe.httpGet.path).toBe("/livez");
  expect(c.readinessProbe.httpGet.path).toBe("/readyz");
}

/** Every HTTP probe of every container on a host-network pod goes over loopback, and its listener binds only there. */
export function expectLoopbackHealthPorts(spec: any): void {
  if (spec.hostNetwork !== true) return;
  for (const c of spec.containers) {
    for (const kind of ["startupProbe", "readinessProbe", "livenessProbe"]) {
      if (c[kind]?.httpGet) expect(c[kind].httpGet.host, `${c.name} ${kind}`).toBe("127.0.0.1");
    }
    const endpoint = flagsOf(c.args ?? []).get("http-endpoint");
    if (endpoint !== undefined) expect(endpoint.startsWith("127.0.0.1:"), `${c.name} --http-endpoint=${endpoint}`).toBe(true);
  }
}
