// The files of a new plugin project live as real files under
// plugins/templates/: shared/ (the fixtures every language starts with), then
// <lang>/ (the code, the build manifest, the README). They can be read, diffed
// and built as what they are; the scaffolder only fills in {{placeholders}}.
import { existsSync, readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";

/** A file of a new project: its text, or a file to copy. */
export type ProjectFile = { rel: string; text: string } | { rel: string; from: string };

/**
 * Stored without their dot: `npm pack` leaves every .gitignore out of a
 * package, so an installed probegate would scaffold projects without one.
 */
const DOTFILES = new Set(["gitignore"]);

/** The text files of a `lang` project from the probegate tree at `root`, placeholders filled from `vars`. */
export function templateFiles(root: string, lang: string, vars: Record<string, string>): ProjectFile[] {
  const out: ProjectFile[] = [];
  for (const part of ["shared", lang]) {
    const dir = join(root, "plugins", "templates", part);
    if (!existsSync(dir)) throw new Error(`${dir} is missing: this installation does not ship the plugin templates`);
    for (const rel of walk(dir)) {
      const file = join(dir, rel);
      const base = rel.split("/").pop()!;
      const dest = DOTFILES.has(base) ? `${rel.slice(0, rel.length - base.length)}.${base}` : rel;
      out.push({ rel: dest, text: fill(readFileSync(file, "utf8"), vars, file) });
    }
  }
  return out;
}

/** `{{key}}` → vars[key]; a placeholder without a value is a broken template, not an empty string. */
function fill(text: string, vars: Record<string, string>, file: string): string {
  return text.replace(/\{\{(\w+)\}\}/g, (_, key: string) => {
    const v = vars[key];
    if (v === undefined) throw new Error(`${file}: no value for the placeholder {{${key}}}`);
    return v;
  });
}

/** Relative paths (with /) of the files under `dir`, sorted; a Rust `target/` build tree is skipped. */
export function walk(dir: string, prefix = ""): string[] {
  const out: string[] = [];
  for (const e of readdirSync(join(dir, prefix), { withFileTypes: true })) {
    const rel = prefix ? `${prefix}/${e.name}` : e.name;
    if (e.isDirectory()) {
      if (e.name !== "target") out.push(...walk(dir, rel));
    } else if (e.isFile()) out.push(rel);
  }
  return out.sort();
}
