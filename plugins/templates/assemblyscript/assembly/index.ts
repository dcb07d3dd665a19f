// {{name}}: TODO say what this check proves and why it matters.
import { Manifest, Opened, Result, checkSource, log, parseError, splitLines } from "{{sdk}}";

const SOURCE = "{{source}}";
// TODO replace this rule: the source must print at least MIN_LINES non-empty lines.
const MIN_LINES = 2;

export function manifest(): string {
  return new Manifest("{{name}}", "0.1.0", "TODO one-line description")
    .source(SOURCE)
    .toJson();
}

// checkSource() answers bad input, a missing or failed source and empty or
// binary output itself, and ends through respond(), which serialises the
// result and frees the call's memory (plugins use the minimal runtime).
export function check(input: string): string {
  return checkSource(input, SOURCE, evaluate);
}

function evaluate(o: Opened): Result {
  let count = 0;
  const lines = splitLines(o.text);
  for (let i = 0; i < lines.length; i++) if (lines[i].trim().length > 0) count++;
  // Shown by `npm test` when a case fails, and in the gateway log at --log-level debug.
  log(SOURCE + ": " + count.toString() + " non-empty line(s)");
  if (count == 0) return parseError(o.source, "no content");
  if (count < MIN_LINES) {
    return Result.fail("TooFewLines", SOURCE + " printed " + count.toString() + " line(s); need " + MIN_LINES.toString());
  }
  return Result.pass("Ok", SOURCE + " printed " + count.toString() + " line(s)");
}
