// Are the required kernel modules (by default `lnet` and `lustre`) loaded?
// Reads /proc/modules. Configuration (kernel-modules.yaml):
//   modules: [lnet, lustre, ko2iblnd]
import { Manifest, Result, checkSource, humanList, Opened, parseError, LineFields, lineEnd } from "../sdk";

const SOURCE = "proc.modules";
const DEFAULT_MODULES: Array<string> = ["lnet", "lustre"];

export function manifest(): string {
  return new Manifest("kernel-modules", "1.1.0", "the required kernel modules (lnet and lustre unless configured) are loaded")
    .source(SOURCE)
    .stringsOption("modules", DEFAULT_MODULES, "kernel modules that must be loaded and Live, e.g. [lnet, lustre, ko2iblnd]")
    .toJson();
}

export function check(input: string): string {
  return checkSource(input, SOURCE, evaluate);
}

function evaluate(o: Opened): Result {
  const REQUIRED = o.input.configStrings("modules", DEFAULT_MODULES);
  // /proc/modules: `name size refcount deps state address [taint]`. Fields are
  // looked at in place; only the states of the required modules are copied.
  const found = new Array<bool>(REQUIRED.length);
  const foundState = new Array<string>();
  for (let r = 0; r < REQUIRED.length; r++) foundState.push("");
  let modules = 0;
  let junk = 0;
  const text = o.text;
  const n = text.length;
  const f = new LineFields();
  let start = 0;
  while (start < n) {
    const nl = lineEnd(text, start);
    f.reset(text, start, nl);
    start = nl + 1;
    if (f.count == 0) continue;
    if (f.count < 2 || !f.isDigits(1)) {
      junk++;
      continue;
    }
    modules++;
    for (let r = 0; r < REQUIRED.length; r++) {
      // exact: lnet_selftest is not lnet; the first line naming it counts
      if (!unchecked(found[r]) && f.is(0, unchecked(REQUIRED[r]))) {
        unchecked((found[r] = true));
        unchecked((foundState[r] = f.count >= 5 ? f.text(4) : "Live"));
      }
    }
  }
  if (modules == 0 || junk > modules) {
    return parseError(o.source, "output does not look like /proc/modules");
  }

  const missing = new Array<string>();
  const notLive = new Array<string>();
  for (let r = 0; r < REQUIRED.length; r++) {
    if (!found[r]) missing.push(REQUIRED[r]);
    else if (foundState[r] != "Live") notLive.push(REQUIRED[r] + " (" + foundState[r] + ")");
  }
  if (missing.length > 0) {
    return Result.fail("ModulesMissing", "kernel module(s) not loaded: " + humanList(missing));
  }
  if (notLive.length > 0) {
    return Result.fail("ModulesNotLive", "kernel module(s) not live: " + humanList(notLive));
  }
  if (REQUIRED.length == 0) return Result.pass("NoModulesRequired", "no kernel modules are configured as required");
  return Result.pass("ModulesLoaded", "kernel module(s) " + humanList(REQUIRED) + " loaded");
}
