// Connection floods against a probe port or socket (issue 22): connections that
// do no work, which must never keep out one that does. Used by the soak's fault
// mix and, as a process of its own, by gateway/test/probe-port-lockout.test.ts:
//   node dist/bench/soak/conn-flood.js MODE TARGET COUNT
// prints one JSON line of counts on SIGTERM.
import net from "node:net";
import { isMain } from "../lib/main.js";
import { FRAME, PREFACE, ackPings, frame } from "./h2-wire.js";

/**
 * idle: connections that send nothing; ping: HTTP/2 preface, then a PING a
 * second (answering the server's PINGs); trickle: an HTTP/1.1 request whose
 * headers arrive a byte a second; malformed: COUNT new connections a second,
 * each sending the preface and a 7-byte PING (a connection error) and then
 * left open. The first three hold COUNT connections, reopening each
 * REOPEN_MS after the server closes it, as a client set on keeping the port
 * full would (the reopened its connections every 30 s).
 */
export type FloodMode = "idle" | "ping" | "trickle" | "malformed";
export const FLOOD_MODES: readonly FloodMode[] = ["idle", "ping", "trickle", "malformed"];

export interface FloodStats {
  opened: number;
  closedByServer: number;
  errors: number;
}

export interface Flood {
  stop(): FloodStats;
}

const REOPEN_MS = 5_000;
const SETTINGS = frame(FRAME.SETTINGS, 0, 0, Buffer.alloc(0));
const PING = frame(FRAME.PING, 0, 0, Buffer.from([1, 2, 3, 4, 5, 6, 7, 8]));
// RFC 9113 §6.7: a PING whose length is not 8 is a connection error (FRAME_SIZE_ERROR).
const BAD_PING = frame(FRAME.PING, 0, 0, Buffer.from([1, 2, 3, 4, 5, 6, 7]));

/** TARGET: HOST:PORT, or an absolute unix socket path. */
export function startFlood(mode: FloodMode, target: string, count: number): Flood {
  const stats: FloodStats = { opened: 0, closedByServer: 0, errors: 0 };
  const sockets = new Set<net.Socket>();
  const timers = new Set<NodeJS.Timeout>();
  let stopping = false;
  const later = (fn: () => void, ms: number, repeat = false) => {
    const t = repeat ? setInterval(fn, ms) : setTimeout(() => (timers.delete(t), fn()), ms);
    timers.add(t);
    return t;
  };
  const connect = () => {
    stats.opened++;
    const i = target.lastIndexOf(":");
    const s = target.startsWith("/") ? net.connect(target) : net.connect(Number(target.slice(i + 1)), target.slice(0, i));
    sockets.add(s);
    s.on("error", () => stats.errors++);
    s.on("close", () => {
      sockets.delete(s);
      if (!stopping) stats.closedByServer++;
    });
    return s;
  };
  const hold = (open: (s: net.Socket) => NodeJS.Timeout | undefined) => {
    const one = () => {
      if (stopping) return;
      const s = connect();
      const t = open(s);
      s.on("close", () => {
        if (t) clearInterval(t), timers.delete(t);
        if (!stopping) later(one, REOPEN_MS);
      });
    };
    for (let i = 0; i < count; i++) later(one, (i * 2) % 1000);
  };
  if (mode === "idle") hold((s) => (s.resume(), undefined));
  else if (mode === "ping") {
    hold((s) => {
      ackPings(s);
      s.write(Buffer.concat([PREFACE, SETTINGS]));
      return later(() => s.writable && s.write(PING), 1000, true);
    });
  } else if (mode === "trickle") {
    hold((s) => {
      s.resume();
      s.write("GET /livez HTTP/1.1\r\nhost: x\r\nx-trickle: ");
      return later(() => s.writable && s.write("a"), 1000, true);
    });
  } else {
    later(() => {
      for (let i = 0; i < count / 10; i++) {
        const s = connect();
        s.resume();
        s.on("connect", () => s.write(Buffer.concat([PREFACE, SETTINGS, BAD_PING])));
      }
    }, 100, true);
  }
  return {
    stop() {
      stopping = true;
      for (const t of timers) clearInterval(t);
      for (const s of sockets) s.destroy();
      return stats;
    },
  };
}

if (isMain(import.meta.url)) {
  const [mode, target, count] = process.argv.slice(2);
  if (!FLOOD_MODES.includes(mode as FloodMode) || !target || !(Number(count) > 0)) {
    process.stderr.write(`usage: conn-flood.js ${FLOOD_MODES.join("|")} HOST:PORT|/SOCKET COUNT\n`);
    process.exit(2);
  }
  const flood = startFlood(mode as FloodMode, target, Number(count));
  process.on("SIGTERM", () => {
    process.stdout.write(`${JSON.stringify(flood.stop())}\n`);
    process.exit(0);
  });
}
