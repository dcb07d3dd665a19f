// Text a plugin, a source or a file name supplies ends up inside line-based
// output: one `[+]`/`[-]` line per check in /readyz and /livez, a Node
// condition's message, an Event's note. A line break in it would add a line
// of the plugin's choosing (`\n[+]other-check ok`), so such text is made one
// line here, once, where it enters the engine, and again by each renderer.

/** Characters that end or disturb a line: C0/C1 controls (\n, \r, \t, ESC…), DEL, and U+2028/U+2029. */
const BREAKING = /[\p{Cc}\u2028\u2029]/gu;

const ESCAPES: Readonly<Record<string, string>> = { "\n": "\\n", "\r": "\\r", "\t": "\\t" };

/**
 * The text on one line, at most `max` characters (UTF-16 units, never
 * splitting a surrogate pair; a cut ends in "…"). Line breaks and tabs become
 * `\n`, `\r`, `\t`, other controls `\u00XX`: visible, and not mistakable for
 * a line of their own.
 */
export function oneLine(text: string, max = 1024): string {
  let out = text.replace(BREAKING, (c) => ESCAPES[c] ?? `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
  if (out.length > max) {
    let end = Math.max(0, max - 1);
    const code = out.charCodeAt(end - 1);
    if (code >= 0xd800 && code <= 0xdbff) end--;
    out = `${out.slice(0, end)}…`;
  }
  return out;
}
