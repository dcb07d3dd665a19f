// Shared body of the fake `lnetctl` and `lctl`. Plain JS, Node built-ins only,
// synchronous file reads: it must start fast, because tests and benchmarks
// run it hundreds of times and measure the gateway, not the fake.
//
// Behaviour is driven by files in the scenario directory named by
// PROBEGATE_FAKE_LNET (see ../README.md for the full contract).

import { appendFileSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { noSuchParam } from "./fake-lustre.js";

const KEY = /^[a-z0-9_]{1,64}$/;
// setTimeout clamps anything above 2^31-1 ms to 1 ms; sleep in slices instead.
const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * `net show -v` → "net_show", `net show -v 3` → "net_show_health" (falls back
 * to net_show's files), `ping 10.0.0.1@tcp` → "ping", `list_nids` → "list_nids",
 * `get_param osc.*.import mdc.*.import mgc.*.import` → "imports",
 * `get_param osc.*.state mdc.*.state mgc.*.state` → "import_states",
 * `get_param -n health_check` → "health_check", `lfs getname` → "getname".
 */
export function commandKey(tool, args) {
  const words = args.filter((a) => !a.startsWith("-"));
  if (words.length === 0) return null;
  if (tool === "lnetctl") {
    if (words[0] === "ping") return "ping";
    const v = args.indexOf("-v");
    if (words[0] === "net" && words[1] === "show" && v >= 0 && Number(args[v + 1]) >= 2) return "net_show_health";
    return words.slice(0, 2).join("_");
  }
  if (tool === "lctl" && words[0] === "get_param" && words.length > 1) {
    const params = words.slice(1);
    if (params.length === 1 && params[0] === "health_check") return "health_check";
    if (params.every((p) => p.endsWith(".import"))) return "imports";
    if (params.every((p) => p.endsWith(".state"))) return "import_states";
    return "get_param";
  }
  return words[0];
}

/** A key with no files of its own answers from this one's (one `net_show.out` serves both verbosities). */
const FALLBACK_KEY = { net_show_health: "net_show" };
const KEY_FILES = ["out", "err", "exit", "delay_ms"];

function readOptional(dir, file) {
  try {
    return readFileSync(join(dir, file));
  } catch (err) {
    if (err && err.code === "ENOENT") return null;
    throw err;
  }
}

function readInt(dir, file, fallback) {
  const raw = readOptional(dir, file);
  if (raw === null) return fallback;
  const n = Number(raw.toString("utf8").trim());
  return Number.isFinite(n) ? n : fallback;
}

function sleep(ms) {
  if (ms <= 0) return Promise.resolve();
  return new Promise((resolve) => {
    const step = () => {
      const slice = Math.min(ms, MAX_TIMER_MS);
      ms -= slice;
      setTimeout(ms > 0 ? step : resolve, slice);
    };
    step();
  });
}

/** What real tools print when LNet is not loaded or not configured (or, for get_param, no Lustre is mounted). */
function notConfigured(tool, key, args) {
  if (tool === "lctl" && args.includes("get_param")) {
    const params = args.filter((a) => !a.startsWith("-") && a !== "get_param");
    return { stderr: params.map(noSuchParam).join("") };
  }
  if (tool === "lfs") return { stderr: "" };
  if (tool === "lctl") {
    return {
      stderr:
        "opening /dev/lnet failed: No such device\n" +
        "hint: the kernel modules may not be loaded\n" +
        `IOC_LIBCFS_GET_NI error 19: No such device\n`,
    };
  }
  if (key === "ping") {
    const nid = args.filter((a) => !a.startsWith("-"))[1] ?? "";
    return {
      stderr: `manage:\n    - ping:\n          errno: -100\n          descr: failed to ping ${nid}: Network is down\n`,
    };
  }
  const [verb = "show", object = key] = key.split("_").reverse();
  return {
    stderr: `${verb}:\n    - ${object}:\n          errno: -100\n          descr: "cannot get ${object}s: Network is down"\n`,
  };
}

/**
 * A server's answer as lnetctl prints it (lnetctl.c jt_ping, liblnetconfig.c
 * infra_ping_nid): the reply naming it on stdout, exit 0; or, exit 255, the
 * error document — from 2.16 (netlink) on stdout with the kernel's errno
 * ("timeout": -110, "unreachable": -113), up to 2.15 ("eio") on stderr with
 * lnetctl's own errno -1 and the cause only in descr (every unanswered ping
 * is -EIO there), descr ending in the newline lnetctl leaves in it.
 */
async function answerPerNid(nid, how) {
  if (how === "hang") await sleep(1e12);
  if (how === "ok") {
    process.stdout.write(`ping:\n    - primary nid: ${nid}\n      Multi-Rail: True\n      peer ni:\n        - nid: ${nid}\n`);
    return;
  }
  if (how === "garbage") {
    process.stdout.write("\u0000garbage\n");
    return;
  }
  process.exitCode = 255;
  if (how === "eio") {
    process.stderr.write(`manage:\n    - ping:\n          errno: -1\n          descr: failed to ping ${nid}: Input/output error\n                 \n`);
    return;
  }
  const [errno, text] = how === "unreachable" ? [-113, "No route to host"] : [-110, "Connection timed out"];
  process.stdout.write(`manage:\n  - ping: ""\n    errno: ${errno}\n    descr: "failed to ping ${nid}: ${text}"\n`);
}

function pingMismatch(nid) {
  return `manage:\n    - ping:\n          errno: -1\n          descr: failed to ping ${nid}: Input/output error\n`;
}

export async function runFakeTool(tool, args) {
  const dir = process.env.PROBEGATE_FAKE_LNET;
  if (!dir) {
    process.stderr.write(`fake ${tool}: PROBEGATE_FAKE_LNET is not set (see gateway/demo/README.md)\n`);
    process.exitCode = 2;
    return;
  }
  if (tool === "mount.lustre") {
    // Only its presence is ever asked (`-V`); the demo node mounts nothing.
    if (args.includes("-V") || args.includes("--version")) {
      process.stdout.write("mount.lustre 2.15.5 (probegate fake)\n");
      return;
    }
    process.stderr.write("fake mount.lustre: mounting is not supported\n");
    process.exitCode = 1;
    return;
  }
  let key = commandKey(tool, args);
  if (key !== null && FALLBACK_KEY[key] && !KEY_FILES.some((s) => readOptional(dir, `${key}.${s}`) !== null)) key = FALLBACK_KEY[key];
  if (key === null || !KEY.test(key)) {
    process.stderr.write(`fake ${tool}: unsupported command: ${args.join(" ")}\n`);
    process.exitCode = 1;
    return;
  }
  try {
    // Logged before any delay, so a test can count a call that later hangs.
    appendFileSync(join(dir, "calls.log"), `${[key, tool, ...args].join(" ")}\n`);
  } catch {
    // A read-only scenario (e.g. an installed package) still answers.
  }

  await sleep(readInt(dir, `${key}.delay_ms`, 0));

  // Per-NID answers (servers): ping_nids.json maps NID → ok | timeout | unreachable | eio | hang | garbage.
  // A NID not in the table answers as below (ping.out, ping.expect_nid …).
  const perNid = key === "ping" ? readOptional(dir, "ping_nids.json") : null;
  const pinged = args.filter((a) => !a.startsWith("-"))[1] ?? "";
  const how = perNid === null ? undefined : JSON.parse(perNid.toString("utf8"))[pinged];
  if (how !== undefined) {
    await answerPerNid(pinged, how);
    return;
  }

  if (key === "ping") {
    const expected = readOptional(dir, "ping.expect_nid");
    const nid = args.filter((a) => !a.startsWith("-"))[1] ?? "";
    if (expected !== null && expected.toString("utf8").trim() !== nid) {
      process.stderr.write(pingMismatch(nid));
      process.exitCode = 1;
      return;
    }
  }

  const out = readOptional(dir, `${key}.out`);
  const err = readOptional(dir, `${key}.err`);
  if (out === null) {
    process.stderr.write(err ?? notConfigured(tool, key, args).stderr);
    process.exitCode = readInt(dir, `${key}.exit`, 1);
    return;
  }
  process.stdout.write(out);
  if (err !== null) process.stderr.write(err);
  process.exitCode = readInt(dir, `${key}.exit`, 0);
}
