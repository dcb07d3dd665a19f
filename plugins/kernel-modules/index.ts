// Are the `lnet` and `lustre` kernel modules loaded? Reads /proc/modules.
import { Manifest, Result, respond, fields, humanList, openSource, parseError, splitLines, allDigits } from "../sdk";

const SOURCE = "proc.modules";
const REQUIRED: Array<string> = ["lnet", "lustre"];

export function manifest(): string {
  return new Manifest("kernel-modules", "1.0.0", "lnet and lustre kernel modules are loaded")
    .source(SOURCE)
    .toJson();
}

export function check(input: string): string {
  return respond(evaluate(input));
}

function evaluate(input: string): Result {
  const o = openSource(input, SOURCE);
  const failure = o.failure;
  if (failure !== null) return failure;

  // /proc/modules: `name size refcount deps state address [taint]`.
  const names = new Array<string>();
  const states = new Array<string>();
  let junk = 0;
  const lines = splitLines(o.text);
  for (let i = 0; i < lines.length; i++) {
    const f = fields(lines[i]);
    if (f.length == 0) continue;
    if (f.length < 2 || !allDigits(f[1])) {
      junk++;
      continue;
    }
    names.push(f[0]);
    states.push(f.length >= 5 ? f[4] : "Live");
  }
  if (names.length == 0 || junk > names.length) {
    return parseError(o.source, "output does not look like /proc/modules");
  }

  const missing = new Array<string>();
  const notLive = new Array<string>();
  for (let r = 0; r < REQUIRED.length; r++) {
    const idx = names.indexOf(REQUIRED[r]); // exact: lnet_selftest is not lnet
    if (idx < 0) missing.push(REQUIRED[r]);
    else if (states[idx] != "Live") notLive.push(REQUIRED[r] + " (" + states[idx] + ")");
  }
  if (missing.length > 0) {
    return Result.fail("ModulesMissing", "kernel module(s) not loaded: " + humanList(missing));
  }
  if (notLive.length > 0) {
    return Result.fail("ModulesNotLive", "kernel module(s) not live: " + humanList(notLive));
  }
  return Result.pass("ModulesLoaded", "kernel modules lnet and lustre are loaded");
}
