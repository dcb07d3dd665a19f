import type { GatewayProcess } from "./gateway-process.js";

export interface ReadyzAnswer {
  status: number;
  text: string;
}

export async function readyz(gw: GatewayProcess, query = "?verbose"): Promise<ReadyzAnswer> {
  const res = await fetch(`http://${gw.http}/readyz${query}`);
  return { status: res.status, text: await res.text() };
}

/** Polls /readyz?verbose until `pred` holds; the timeout is generous because CI machines are shared. */
export async function untilReadyz(gw: GatewayProcess, pred: (r: ReadyzAnswer) => boolean, what: string, timeoutMs = 20_000): Promise<ReadyzAnswer> {
  const start = Date.now();
  let last: ReadyzAnswer = { status: 0, text: "" };
  while (Date.now() - start < timeoutMs) {
    last = await readyz(gw);
    if (pred(last)) return last;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`timed out waiting for ${what}; last /readyz?verbose:\n${last.text}`);
}

/** One check's condition as /readyz's JSON gives it (the fields every caller reads). */
export interface ReadyzCondition {
  name: string;
  status: string;
  reason: string;
  message: string;
}

/** Every check's condition, from /readyz's JSON. */
export async function readyzConditions(gw: GatewayProcess): Promise<ReadyzCondition[]> {
  const res = await fetch(`http://${gw.http}/readyz`, { headers: { accept: "application/json" } });
  return ((await res.json()) as { conditions: ReadyzCondition[] }).conditions;
}

/** How often `check` was called (`run`) and its stable verdict kept (`reused`), from /metrics. */
export async function checkEvaluations(gw: GatewayProcess, check: string): Promise<{ run: number; reused: number }> {
  const text = await (await fetch(`http://${gw.http}/metrics`)).text();
  const count = (result: string) => {
    const line = text.split("\n").find((l) => l.startsWith(`probegate_check_evaluations_total{check="${check}",result="${result}"}`));
    return Number(line?.split(" ").pop() ?? 0);
  };
  return { run: count("run"), reused: count("reused") };
}
