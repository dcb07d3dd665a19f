// Are the required kernel modules (by default `lnet` and `lustre`) loaded?
// Reads /proc/modules. Configuration (kernel-modules.yaml):
//   modules: [lnet, lustre, ko2iblnd]
//   lnetConfiguredAt: mount   before LNet is configured (at the first mount),
//                             the modules need only be installed for the
//                             running kernel: the mount loads them
import {
  Manifest, Result, CheckInput, LnetPhase, checkSourcePhased, phasedManifest, humanList, Opened, parseError,
  sourceFailed, textProblem, hasModule, LineFields, lineEnd,
} from "../sdk";

const SOURCE = "proc.modules";
const RELEASE = "kernel.release";
const INSTALLED = "kernel.modules_dep";
const DEFAULT_MODULES: Array<string> = ["lnet", "lustre"];

export function manifest(): string {
  return phasedManifest(
    new Manifest("kernel-modules", "1.2.0", "the required kernel modules (lnet and lustre unless configured) are loaded, or before LNet is configured at the first mount, installed")
      .source(SOURCE)
      .source(RELEASE)
      .source(INSTALLED)
      .stringsOption("modules", DEFAULT_MODULES, "kernel modules that must be loaded and Live, e.g. [lnet, lustre, ko2iblnd]"),
  ).toJson();
}

export function check(input: string): string {
  // Stable: nothing here depends on the round (no epoch, no events); the host may keep a verdict while the sources read the same.
  return checkSourcePhased(input, SOURCE, evaluate, beforeConfigured, true);
}

/** Before the first mount: every required module is in modules.dep of the running kernel. */
function beforeConfigured(input: CheckInput, phase: LnetPhase): Result {
  const required = input.configStrings("modules", DEFAULT_MODULES);
  const rel = input.source(RELEASE);
  const release = rel !== null && rel.ok ? rel.stdout.trim() : "";
  const kernel = release.length > 0 ? "kernel " + release : "the running kernel";
  const dep = input.source(INSTALLED);
  if (dep === null) return Result.fail("SourceMissing", "source " + INSTALLED + " was not provided to the check");
  if (!dep.ok) {
    if (dep.error.startsWith("ENOENT")) {
      return Result.fail("ModulesNotInstalled", phase.label() + ": no modules installed for " + kernel + ": " + dep.error);
    }
    const r = sourceFailed(dep);
    r.message = phase.label() + ": " + r.message;
    return r;
  }
  const problem = textProblem(dep.stdout);
  if (problem.length > 0) return parseError(dep, "output " + problem);
  // modules.dep names files: the kernel's `-` and `_` are the same module.
  const missing = new Array<string>();
  for (let r = 0; r < required.length; r++) {
    if (!hasModule(dep.stdout, required[r].replaceAll("-", "_"))) missing.push(required[r]);
  }
  if (missing.length > 0) {
    return Result.fail("ModulesNotInstalled", phase.label() + ": kernel module(s) " + humanList(missing) + " not installed for " + kernel + " (not in its modules.dep)");
  }
  if (required.length == 0) return Result.pass("LnetNotYetConfigured", phase.label() + ": no kernel modules are configured as required");
  return Result.pass("LnetNotYetConfigured", phase.label() + ": kernel module(s) " + humanList(required) + " installed for " + kernel + "; the first mount loads them");
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
