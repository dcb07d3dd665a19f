// Volume check: is the volume's staging and/or target path really a Lustre
// mount? Reads <procfs>/mounts. Run in the background for every known volume
// (probe "volume"), with the volume's paths as facts volume.path and volume.stagingPath.
//
// Why: when a Lustre client is evicted or a mount is lazily unmounted, the
// directory is still there and the driver's stats call can succeed on the
// empty directory underneath, so kubelet would report a healthy volume whose
// data is gone. A missing or non-lustre mount at the path is the signal.
import { Manifest, Result, humanList, Opened, parseError, checkSource, normalizeMountPath, parseMountTable, mountAt } from "../sdk";

const SOURCE = "proc.mounts";

export function manifest(): string {
  return new Manifest("volume-lustre-mount", "1.0.0", "the volume's staging and target paths are mounted Lustre file systems")
    .source(SOURCE)
    .probeKind("volume")
    .toJson();
}

export function check(input: string): string {
  return checkSource(input, SOURCE, evaluate);
}

function evaluate(o: Opened): Result {
  const paths = new Array<string>();
  const staging = o.input.fact("volume.stagingPath");
  const target = o.input.fact("volume.path");
  if (staging.length > 0) paths.push(normalizeMountPath(staging));
  if (target.length > 0 && !paths.includes(normalizeMountPath(target))) paths.push(normalizeMountPath(target));
  if (paths.length == 0) {
    return Result.warn("NoVolumePath", "no volume path or staging path was given; nothing to check");
  }

  // <procfs>/mounts: `device mountpoint fstype options dump pass`.
  const entries = parseMountTable(o.text);
  if (entries === null) return parseError(o.source, "output does not look like /proc/mounts");

  const missing = new Array<string>();
  const wrongType = new Array<string>();
  const devices = new Array<string>();
  for (let i = 0; i < paths.length; i++) {
    const e = mountAt(entries, paths[i]);
    if (e === null) missing.push(paths[i]);
    else if (e.fsType != "lustre") wrongType.push(paths[i] + " (" + e.fsType + " from " + e.device + ")");
    else if (!devices.includes(e.device)) devices.push(e.device);
  }
  if (missing.length > 0) {
    return Result.fail("LustreNotMounted", "not mounted: " + humanList(missing) + " (no entry in /proc/mounts)");
  }
  if (wrongType.length > 0) {
    return Result.fail("NotLustre", "mounted, but not as lustre: " + humanList(wrongType));
  }
  return Result.pass("LustreMounted", humanList(paths) + " mounted from " + humanList(devices));
}
