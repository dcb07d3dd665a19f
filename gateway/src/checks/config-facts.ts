// A plugin's own configuration as parameters of the sources it reads: a
// source may take `config.KEY` (e.g. lnet.peer_pings pings `config.peers`,
// lnet-self-ping's configured peers), so what an operator configures for a
// check reaches the source that check reads, and nothing else's. Lists are
// joined with ","; the source validates the value like any fact before
// anything runs. Only for reading sources: the plugin sees its configuration
// as such.

import type { ConfigValue } from "../runtime/schema.js";

export function withConfigFacts(facts: Readonly<Record<string, string>>, config: ConfigValue | undefined): Readonly<Record<string, string>> {
  if (config === undefined || config === null || typeof config !== "object" || Array.isArray(config)) return facts;
  let out: Record<string, string> | undefined;
  for (const [k, v] of Object.entries(config as Record<string, unknown>)) {
    let text: string | undefined;
    if (typeof v === "string") text = v;
    else if (Array.isArray(v) && v.every((x) => typeof x === "string")) text = v.join(",");
    if (text === undefined || text === "") continue;
    out ??= { ...facts };
    out[`config.${k}`] = text;
  }
  return out ?? facts;
}
