// Storage health (probe "storage"): has this Lustre client hit an LBUG?
// `lctl get_param -n health_check` on a client says `healthy` unless an
// assertion fired (`LBUG` from 2.13, `NOT HEALTHY` on 2.12, whose LBUG text is
// overwritten): no client device implements a health callback, so the file
// says nothing about servers. After an LBUG the client is wedged until reboot:
// its file systems are unreachable from this node whatever their imports say.
import { Manifest, Result, CheckInput, respond, clip, oneLine, noSuchLustreParam, sourceFailed, parseError, lineEnd, STORAGE_DEGRADED, STORAGE_UNREACHABLE, firstLine } from "../sdk";

const SOURCE = "lustre.health_check";

export function manifest(): string {
  return new Manifest("lustre-health-check", "1.0.0", "the Lustre client has not hit an LBUG (health_check)")
    .source(SOURCE)
    .probeKind("storage")
    .toJson();
}

export function check(input: string): string {
  const inp = CheckInput.parse(input);
  if (inp.error.length > 0) return respond(unknown(Result.fail("BadInput", inp.error)));
  const r = evaluate(inp);
  return respond(cannotTell(r) ? r : r.stable());
}

/**
 * Stable (the host may keep the verdict while the file reads the same,
 * plugins/ABI.md "Health"): nothing here depends on the round's time or
 * carries an event. Only "cannot tell" is left to be judged every round.
 */
function cannotTell(r: Result): bool {
  for (let i = 0; i < r.healthEntries.length; i++) if (r.healthEntries[i].reason == "HealthUnknown") return true;
  return false;
}

function unknown(r: Result): Result {
  return r.health(STORAGE_DEGRADED, "HealthUnknown", "cannot read the Lustre client's health_check: " + clip(oneLine(r.message), 400));
}

function evaluate(input: CheckInput): Result {
  const src = input.source(SOURCE);
  if (src === null) return unknown(Result.fail("SourceMissing", "source " + SOURCE + " was not provided to the check"));
  if (noSuchLustreParam(src)) return Result.pass("LustreNotLoaded", "no health_check parameter: the Lustre modules are not loaded");
  if (!src.ok) return unknown(sourceFailed(src));
  const t = src.stdout;
  let healthy = false;
  let lbug = false;
  let notHealthy = false;
  const devices = new Array<string>();
  let start = 0;
  while (start < t.length) {
    const nl = lineEnd(t, start);
    const line = t.substring(start, nl).trim();
    start = nl + 1;
    if (line.length == 0) continue;
    if (line == "healthy") healthy = true;
    else if (line == "LBUG") lbug = true;
    else if (line == "NOT HEALTHY") notHealthy = true;
    else if (line.startsWith("device ") && line.endsWith(" reported unhealthy")) {
      if (devices.length < 5) devices.push(line.substring(7, line.length - 19));
    } else return unknown(parseError(src, "unexpected line: " + clip(oneLine(line), 80)));
  }
  if (lbug || notHealthy) {
    const what = lbug ? "LBUG" : "NOT HEALTHY";
    let msg = "Lustre client health_check says " + what + (devices.length > 0 ? " (unhealthy: " + devices.join(", ") + ")" : "") +
      ": an assertion failed in the client (LBUG); its mounts hang until the node is rebooted";
    return Result.fail("ClientLbug", msg).health(STORAGE_UNREACHABLE, "ClientLbug", msg);
  }
  if (!healthy) return unknown(parseError(src, t.trim().length == 0 ? "output is empty" : "no healthy/LBUG/NOT HEALTHY line: " + firstLine(t, 80)));
  return Result.pass("ClientHealthy", "Lustre client health_check: healthy");
}
