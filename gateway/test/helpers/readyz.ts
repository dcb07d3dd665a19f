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
