// `kernel.modules_dep`: the modules installed for the running kernel, for
// checks that must tell "lustre can be loaded" before anything loads it (LNet
// configured at the first mount). The release comes from procfs, the list
// from `<modules dir>/<release>/modules.dep`, whose every module has a line.
// modules.dep is about a megabyte on a distribution kernel, so the gateway
// hands plugins only the names (tens of KiB) and parses the file again only
// when it changes.

import { stat } from "node:fs/promises";
import { join } from "node:path";
import { fileFailure, fileOutput, type Produced, type SourceDef } from "./definitions.js";
import { missingFileError, readCapped } from "./read-file.js";
import { capUtf8 } from "../../support/decode.js";
import { quoteForMessage } from "./validate.js";

/** A modules.dep larger than this is not one (a distribution kernel's is about 1 MiB). */
const MODULES_DEP_CAP = 16 * 1024 * 1024;

// Release strings seen in the field: 6.8.0-1015-aws, 5.14.0-427.el9.x86_64,
// 6.1.100+ (COS), 5.15.0-1064-azure. It becomes a path component, so nothing else.
const RELEASE = /^[A-Za-z0-9][A-Za-z0-9._+~-]{0,127}$/;

/** `kernel/fs/lustre/lustre.ko.zst` → `lustre`; the kernel reports names with `_` for `-`. */
function moduleName(path: string): string | undefined {
  const m = /([^/]+)\.ko(?:\.(?:gz|xz|zst|bz2))?$/.exec(path);
  return m ? m[1].replace(/-/g, "_") : undefined;
}

/** One name per line, in file order, each once; lines that name no module are skipped. */
function modulesDepNames(text: string): string {
  const seen = new Set<string>();
  let out = "";
  for (const line of text.split("\n")) {
    const colon = line.indexOf(":");
    if (colon <= 0) continue;
    const name = moduleName(line.slice(0, colon).trim());
    if (name === undefined || seen.has(name)) continue;
    seen.add(name);
    out += `${name}\n`;
  }
  return out;
}

/**
 * `readRelease` reads `<procfs>/sys/kernel/osrelease` (the catalog's
 * kernel.release, so one read a round serves both sources).
 */
export function modulesDepSource(
  name: string,
  procfs: string,
  modulesDir: string,
  ttlMs: number,
  maxOutputBytes: number,
  readRelease: () => Promise<{ ok: boolean; stdout: string; error: string | null }>,
): SourceDef {
  const releaseFile = join(procfs, "sys", "kernel", "osrelease");
  // The last parse, reused while modules.dep is the same file with the same size and mtime.
  let memo: { key: string; text: string } | undefined;
  const run = async (): Promise<Produced> => {
    const rel = await readRelease();
    if (!rel.ok) return fileFailure(rel.error ?? `EIO: ${releaseFile} cannot be read`);
    const release = rel.stdout.trim();
    if (!RELEASE.test(release) || release === "." || release === "..") {
      return fileFailure(`EINVAL: ${releaseFile} holds no kernel release: ${quoteForMessage(release)}`);
    }
    const path = join(modulesDir, release, "modules.dep");
    let key: string;
    try {
      const st = await stat(path);
      key = `${path}\0${st.ino}\0${st.size}\0${st.mtimeMs}`;
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code ?? "EIO";
      return fileFailure(code === "ENOENT" ? `${missingFileError(path)} (no modules installed for kernel ${release})` : `${code}: ${path} cannot be read`);
    }
    if (memo?.key === key) return fileOutput(memo.text, false, maxOutputBytes, path);
    const dep = await readCapped(path, MODULES_DEP_CAP);
    if (!dep.ok) return fileFailure(dep.error);
    if (dep.truncated) return fileFailure(`EFBIG: ${path} exceeded ${MODULES_DEP_CAP} bytes`);
    const names = modulesDepNames(dep.text);
    const capped = capUtf8(names, maxOutputBytes);
    if (capped.cut) return fileOutput(capped.text, true, maxOutputBytes, `module names from ${path}`);
    memo = { key, text: names };
    return fileOutput(names, false, maxOutputBytes, path);
  };
  return {
    name,
    kind: "file",
    ttlMs,
    params: [],
    path: join(modulesDir, "{release}", "modules.dep"),
    // Replayed like the file it is read from: a saved not-found is that file missing.
    replay: { kind: "file", path: join(modulesDir, "{release}", "modules.dep"), maxOutputBytes },
    prepare: () => ({ key: "", run }),
  };
}
