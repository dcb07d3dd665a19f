// A connection-table attacker for gateway/test/probe-port-lockout.test.ts, run
// as its own process so its sockets and event loop are not the prober's.
// Usage: node lockout-attacker.mjs MODE TARGET COUNT
//   MODE: idle | ping | malformed | trickle
//   TARGET: HOST:PORT or an absolute unix socket path
//   COUNT: connections held open (idle, ping, trickle), or new connections a second (malformed)
// Closed connections are reopened after a second, as a client set on keeping
// the port full would. Runs until killed; prints one JSON line of counts on SIGTERM.
import net from "node:net";

const [mode, target, countRaw] = process.argv.slice(2);
const count = Number(countRaw);
const PREFACE = Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", "latin1");
const SETTINGS = Buffer.from([0, 0, 0, 4, 0, 0, 0, 0, 0]);
const PING = Buffer.from([0, 0, 8, 6, 0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8]);
/** A PING of 7 bytes: a connection error (FRAME_SIZE_ERROR), the server sends GOAWAY. */
const BAD_PING = Buffer.from([0, 0, 7, 6, 0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7]);

const stats = { opened: 0, closedByServer: 0, errors: 0 };
let stopping = false;

function connect() {
  stats.opened++;
  const s = target.startsWith("/") ? net.connect(target) : net.connect(Number(target.split(":").pop()), target.slice(0, target.lastIndexOf(":")));
  s.on("error", () => stats.errors++);
  return s;
}

/** Answers the server's PINGs (a raw client that did not would be cut as not speaking HTTP/2). */
function ackPings(s) {
  let buf = Buffer.alloc(0);
  s.on("data", (chunk) => {
    buf = Buffer.concat([buf, chunk]);
    while (buf.length >= 9) {
      const len = buf.readUIntBE(0, 3);
      if (buf.length < 9 + len) break;
      if (buf[3] === 6 && (buf[4] & 1) === 0 && len === 8) s.write(Buffer.concat([Buffer.from([0, 0, 8, 6, 1, 0, 0, 0, 0]), buf.subarray(9, 17)]));
      buf = buf.subarray(9 + len);
    }
  });
}

function hold(open) {
  const one = () => {
    if (stopping) return;
    const s = connect();
    const timers = open(s);
    s.on("close", () => {
      for (const t of timers) clearInterval(t);
      if (stopping) return;
      stats.closedByServer++;
      setTimeout(one, 1000);
    });
  };
  for (let i = 0; i < count; i++) setTimeout(one, (i * 2) % 1000);
}

if (mode === "idle") {
  hold((s) => {
    s.resume();
    return [];
  });
} else if (mode === "ping") {
  hold((s) => {
    ackPings(s);
    s.write(Buffer.concat([PREFACE, SETTINGS]));
    return [setInterval(() => s.writable && s.write(PING), 1000)];
  });
} else if (mode === "trickle") {
  hold((s) => {
    s.resume();
    s.write("GET /livez HTTP/1.1\r\nhost: x\r\nx-trickle: ");
    return [setInterval(() => s.writable && s.write("a"), 1000)];
  });
} else if (mode === "malformed") {
  // count new connections a second, each sending the preface and one malformed
  // frame, then left open: the server has to close them.
  setInterval(() => {
    for (let i = 0; i < count / 10; i++) {
      const s = connect();
      s.resume();
      s.on("close", () => stats.closedByServer++);
      s.on("connect", () => s.write(Buffer.concat([PREFACE, SETTINGS, BAD_PING])));
    }
  }, 100);
} else {
  process.stderr.write(`unknown mode ${mode}\n`);
  process.exit(2);
}

process.on("SIGTERM", () => {
  stopping = true;
  process.stdout.write(`${JSON.stringify(stats)}\n`);
  process.exit(0);
});
