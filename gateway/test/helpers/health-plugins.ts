// Small AssemblyScript check plugins for the storage/volume health tests:
// a storage check whose output follows a case word in its source's stdout,
// and a volume check that echoes the facts and the volume.statfs lines it
// got and judges the statfs line like a real volume check would.
import { compileAs } from "../hostile/build.js";

const HELPERS = `
function between(s: string, start: string, end: string): string {
  const i = s.indexOf(start);
  if (i < 0) return "";
  const j = s.indexOf(end, i + start.length);
  if (j < 0) return "";
  return s.substring(i + start.length, j);
}
`;

function manifest(name: string, probe: string, sources: string[]): string {
  return JSON.stringify({ abi: 1, name, version: "1.0.0", description: "health test plugin", sources, modes: ["node"], probe, severity: "required" });
}

/**
 * probe:"storage", reading `source`: its stdout's first word picks the output
 * from `cases` (verbatim JSON; "garbage" is returned as is); otherwise a pass
 * whose message says `epoch=E prev=P` from the input's round.
 */
export function storagePlugin(name: string, source: string, cases: Record<string, string>): Promise<Uint8Array> {
  const branches = Object.entries(cases)
    .map(([word, out]) => `  if (input.includes(${JSON.stringify(`"stdout":"${word}`)})) return ${JSON.stringify(out)};`)
    .join("\n");
  return compileAs(`${HELPERS}
export function manifest(): string {
  return ${JSON.stringify(manifest(name, "storage", [source]))};
}
export function check(input: string): string {
${branches}
  const epoch = between(input, '"round":{"epoch":', ',');
  const prev = between(input, '"previousEpoch":', '}');
  return '{"status":"pass","reason":"Ok","message":"epoch=' + epoch + ' prev=' + prev + '","facts":{}}';
}
`);
}

/**
 * probe:"volume" over volume.statfs: message `id=… ro=… statfs=…`; a hung
 * statfs line → INACCESSIBLE MountHung, an error line → INACCESSIBLE
 * StatfsFailed, volume id "wrong-family" → a storage status (bad output).
 */
export function volumePlugin(name: string): Promise<Uint8Array> {
  return compileAs(`${HELPERS}
export function manifest(): string {
  return ${JSON.stringify(manifest(name, "volume", ["volume.statfs"]))};
}
export function check(input: string): string {
  const id = between(input, '"volume.id":"', '"');
  const ro = between(input, '"volume.readOnly":"', '"');
  const staging = between(input, '"volume.stagingPath":"', '"');
  const statfs = between(input, '"stdout":"', '"');
  const msg = 'id=' + id + ' ro=' + ro + ' staging=' + staging + ' statfs=' + statfs;
  if (id == "wrong-family") return '{"status":"fail","reason":"X","message":"m","facts":{},"health":[{"status":"STORAGE_DEGRADED","reason":"X","message":"m"}]}';
  if (statfs.includes(" hung ")) return '{"status":"fail","reason":"MountHung","message":"' + msg + '","facts":{},"health":[{"status":"INACCESSIBLE","reason":"MountHung","message":"' + msg + '"}]}';
  if (statfs.includes(" error ")) return '{"status":"fail","reason":"StatfsFailed","message":"' + msg + '","facts":{},"health":[{"status":"INACCESSIBLE","reason":"StatfsFailed","message":"' + msg + '"}]}';
  return '{"status":"pass","reason":"Ok","message":"' + msg + '","facts":{}}';
}
`);
}
