/*
 * probegate command spawner.
 *
 * Node starts a child with fork(): the whole gateway's page tables are copied
 * and then faulted back copy-on-write, ~1-2.6 ms of gateway CPU per command at
 * its working RSS (bench/fork-cost.ts). This small process is started once,
 * while the gateway is still small, and starts every source command for it
 * with posix_spawn (glibc: CLONE_VM|CLONE_VFORK, no page-table copy), so a
 * command costs the gateway one pipe write and one read.
 *
 * It does what gateway/src/exec/run-command.ts does for a direct
 * spawn, and nothing more: argv only (no shell; the path is resolved by the
 * gateway), the environment given, cwd "/", stdin /dev/null, each command its
 * own process group, per-stream output caps and a timeout that SIGKILL the
 * group, the group killed again once the leader exits, a grace for pipes held
 * open by something outside the group. The result texts are composed on the
 * gateway side from the raw facts reported here, so both paths say the same.
 *
 * It never waits on one child: a single poll loop serves every command, so a
 * command stuck in uninterruptible sleep stalls nothing else. When its request
 * pipe closes (the gateway is gone) it kills every command's group and exits.
 *
 * Protocol (stdin requests, stdout replies): the op codes, flags, bounds and
 * each frame's fixed words are named in spawner-protocol.h, generated from
 * their one definition, gateway/src/exec/spawner-protocol.ts (a test checks
 * the two agree). Every integer is u32 little-endian, every frame prefixed
 * with the length of what follows it, a string a u32 length and its bytes.
 *   SP_REQ_RUN      : RUN words, str path, str argv[argc], str env[envc]
 *                     (timeout_ms SP_NO_TIMEOUT: none; the gateway bounds its wait itself)
 *   SP_REQ_KILL     : KILL words
 *   SP_REQ_RUN_KEEP : RUN_KEEP words (RUN's, with slot and held), then as SP_REQ_RUN;
 *                     see "Kept output" below
 *   -> SP_REP_STARTED: STARTED words
 *   -> SP_REP_DONE   : DONE words, stdout, u32 n + stderr; flags SP_F_*
 *                      (SP_F_SAME_OUT: stdout is the kept output `held`, n is 0)
 *
 * Kept output. A source command usually prints what it printed last time (a
 * healthy node's Lustre state listing, hundreds of KiB, every few seconds).
 * Sending it again costs the gateway the pipe reads, a buffer and a decoding
 * that all end as garbage in its heap. So a run may name a slot (one per
 * source) and the token of the output the gateway holds for it (`held`, 0:
 * none). The slot keeps the last whole stdout's length and digest and its
 * token, the id of the run that printed it. When the new stdout has that
 * length and digest and the gateway holds that very output, the reply says so
 * (flag 16) instead of carrying it; otherwise it carries the output, which is
 * kept under the run's id. A cut output is never kept. A new spawner process
 * starts with every slot empty, so after a restart the first run of each slot
 * sends in full.
 *
 * The digest, not the bytes: keeping the listing (561 KiB at 64 mounts of 64
 * OSTs) cost this process as much resident memory for as long as it ran. It
 * is SipHash-2-4 with a 128-bit result under a key drawn from the kernel when
 * the process starts: a keyed function whose key no command sees, so no
 * output can be made to collide with another on purpose, and by chance about
 * once in 2^128 comparisons.
 * Without a key (getrandom failing, or the kernel's pool not yet ready: this
 * never waits for it) nothing is kept: every run sends in full.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <malloc.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "spawner-protocol.h"

_Static_assert((int)SP_RUN_KEEP_WORDS >= (int)SP_RUN_WORDS, "handle_run reads either run layout into one array");

#define READ_CHUNK 65536

struct slot {
  int used;
  uint32_t token;
  size_t len;
  uint64_t digest[2];
};

static struct slot slots[SP_KEEP_SLOTS];
static uint64_t digest_key[2];
static int have_digest_key;
/* SipHash-2-4 with a 128-bit result (Aumasson and Bernstein). */
static uint64_t sip_rotl(uint64_t x, int b) { return (x << b) | (x >> (64 - b)); }

static uint64_t sip_le64(const unsigned char *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--) v = (v << 8) | p[i];
  return v;
}

#define SIP_ROUND(v0, v1, v2, v3) \
  do {                            \
    v0 += v1;                     \
    v1 = sip_rotl(v1, 13);        \
    v1 ^= v0;                     \
    v0 = sip_rotl(v0, 32);        \
    v2 += v3;                     \
    v3 = sip_rotl(v3, 16);        \
    v3 ^= v2;                     \
    v0 += v3;                     \
    v3 = sip_rotl(v3, 21);        \
    v3 ^= v0;                     \
    v2 += v1;                     \
    v1 = sip_rotl(v1, 17);        \
    v1 ^= v2;                     \
    v2 = sip_rotl(v2, 32);        \
  } while (0)

static void siphash128(const uint64_t key[2], const void *data, size_t len, uint64_t out[2]) {
  const unsigned char *p = data;
  uint64_t v0 = key[0] ^ 0x736f6d6570736575ULL, v1 = key[1] ^ 0x646f72616e646f6dULL ^ 0xee;
  uint64_t v2 = key[0] ^ 0x6c7967656e657261ULL, v3 = key[1] ^ 0x7465646279746573ULL;
  size_t whole = len - len % 8;
  for (size_t i = 0; i < whole; i += 8) {
    uint64_t m = sip_le64(p + i);
    v3 ^= m;
    SIP_ROUND(v0, v1, v2, v3);
    SIP_ROUND(v0, v1, v2, v3);
    v0 ^= m;
  }
  uint64_t b = (uint64_t)(len & 0xff) << 56;
  for (size_t i = 0; i < len % 8; i++) b |= (uint64_t)p[whole + i] << (8 * i);
  v3 ^= b;
  SIP_ROUND(v0, v1, v2, v3);
  SIP_ROUND(v0, v1, v2, v3);
  v0 ^= b;
  v2 ^= 0xee;
  for (int i = 0; i < 4; i++) SIP_ROUND(v0, v1, v2, v3);
  out[0] = v0 ^ v1 ^ v2 ^ v3;
  v1 ^= 0xdd;
  for (int i = 0; i < 4; i++) SIP_ROUND(v0, v1, v2, v3);
  out[1] = v0 ^ v1 ^ v2 ^ v3;
}

struct stream {
  int fd;
  char *buf;
  size_t len;
  int cut;
};

struct job {
  uint32_t id;
  pid_t pid;
  uint32_t cap;
  int64_t deadline;
  int64_t grace; /* 0: not started */
  int deadline_fired;
  int exited;
  int status;
  int timed_out;
  int slot; /* -1: stdout not kept */
  uint32_t held;
  struct stream out, err;
};

static struct job **jobs;
static size_t njobs, jobs_cap;
static int sigpipe_fds[2];

static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void on_sigchld(int sig) {
  (void)sig;
  int saved = errno;
  char c = 0;
  ssize_t r = write(sigpipe_fds[1], &c, 1);
  (void)r; /* full pipe: a wake-up is already pending */
  errno = saved;
}

static void die(int code);

static void write_all(const void *p, size_t n) {
  const char *c = p;
  while (n > 0) {
    ssize_t w = write(1, c, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      die(3); /* the gateway is gone */
    }
    c += w;
    n -= (size_t)w;
  }
}

static void put32(char *p, uint32_t v) {
  p[0] = (char)(v & 0xff);
  p[1] = (char)((v >> 8) & 0xff);
  p[2] = (char)((v >> 16) & 0xff);
  p[3] = (char)((v >> 24) & 0xff);
}

static uint32_t get32(const unsigned char *p) {
  return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

/* The u32 word `w` of a frame whose length prefix starts at f. */
#define WORD(f, w) ((f) + 4 + 4 * (w))

static void reply_started(uint32_t id, pid_t pid) {
  char f[4 + 4 * SP_STARTED_WORDS];
  put32(f, 4 * SP_STARTED_WORDS);
  put32(WORD(f, SP_STARTED_TYPE), SP_REP_STARTED);
  put32(WORD(f, SP_STARTED_ID), id);
  put32(WORD(f, SP_STARTED_PID), (uint32_t)pid);
  write_all(f, sizeof f);
}

static void reply_done(uint32_t id, int spawn_errno, uint32_t flags, int code, int sig, const struct stream *o,
                       const struct stream *e) {
  size_t olen = o ? o->len : 0, elen = e ? e->len : 0;
  char h[4 + 4 * SP_DONE_WORDS];
  put32(WORD(h, SP_DONE_TYPE), SP_REP_DONE);
  put32(WORD(h, SP_DONE_ID), id);
  put32(WORD(h, SP_DONE_SPAWN_ERRNO), (uint32_t)spawn_errno);
  put32(WORD(h, SP_DONE_FLAGS), flags);
  put32(WORD(h, SP_DONE_EXIT_CODE), (uint32_t)code);
  put32(WORD(h, SP_DONE_SIGNAL), (uint32_t)sig);
  put32(WORD(h, SP_DONE_STDOUT_LEN), (uint32_t)olen);
  /* length counts everything after itself: the words, stdout, stderr's length, stderr */
  put32(h, (uint32_t)(4 * SP_DONE_WORDS + olen + 4 + elen));
  write_all(h, sizeof h);
  if (olen) write_all(o->buf, olen);
  char l[4];
  put32(l, (uint32_t)elen);
  write_all(l, 4);
  if (elen) write_all(e->buf, elen);
}

static void kill_group(struct job *j) {
  if (j->pid > 0) kill(-j->pid, SIGKILL);
}

static void close_stream(struct stream *s) {
  if (s->fd >= 0) close(s->fd);
  s->fd = -1;
}

static void finish(size_t i) {
  struct job *j = jobs[i];
  close_stream(&j->out);
  close_stream(&j->err);
  uint32_t flags = 0;
  int code = -1, sig = 0;
  if (j->exited) {
    flags |= SP_F_EXITED;
    if (WIFEXITED(j->status)) code = WEXITSTATUS(j->status);
    else if (WIFSIGNALED(j->status)) sig = WTERMSIG(j->status);
  }
  if (j->timed_out) flags |= SP_F_TIMED_OUT;
  if (j->out.cut) flags |= SP_F_STDOUT_CUT;
  if (j->err.cut) flags |= SP_F_STDERR_CUT;
  if (j->slot >= 0) {
    struct slot *k = &slots[j->slot];
    if (j->out.cut || !have_digest_key) {
      *k = (struct slot){0};
    } else {
      uint64_t d[2];
      siphash128(digest_key, j->out.buf, j->out.len, d);
      if (k->used && j->held != 0 && k->token == j->held && k->len == j->out.len && k->digest[0] == d[0] &&
          k->digest[1] == d[1]) {
        flags |= SP_F_SAME_OUT;
        j->out.len = 0;
      } else {
        *k = (struct slot){.used = 1, .token = j->id, .len = j->out.len, .digest = {d[0], d[1]}};
      }
    }
  }
  reply_done(j->id, 0, flags, code, sig, &j->out, &j->err);
  free(j->out.buf);
  free(j->err.buf);
  free(j);
  jobs[i] = jobs[--njobs];
}

static void start_grace(struct job *j, int64_t now) {
  if (j->grace == 0) j->grace = now + SP_GRACE_MS;
}

static void pump(struct job *j, struct stream *s, int64_t now) {
  char chunk[READ_CHUNK];
  ssize_t n = read(s->fd, chunk, sizeof chunk);
  if (n < 0) {
    if (errno == EINTR || errno == EAGAIN) return;
    close_stream(s);
    return;
  }
  if (n == 0) {
    close_stream(s);
    return;
  }
  if (s->cut) return; /* past the cap: drained and dropped until the group dies */
  size_t room = j->cap - s->len;
  size_t keep = (size_t)n > room ? room : (size_t)n;
  if (keep > 0) {
    char *nb = realloc(s->buf, s->len + keep);
    if (!nb) die(4);
    s->buf = nb;
    memcpy(s->buf + s->len, chunk, keep);
    s->len += keep;
  }
  if ((size_t)n > room) {
    s->cut = 1;
    kill_group(j);
    start_grace(j, now);
  }
}

static void reap(void) {
  for (;;) {
    int st;
    pid_t p = waitpid(-1, &st, WNOHANG);
    if (p <= 0) return;
    for (size_t i = 0; i < njobs; i++) {
      struct job *j = jobs[i];
      if (j->pid == p && !j->exited) {
        j->exited = 1;
        j->status = st;
        /* Whatever the command left running in its group goes too; its
           output already sits in the pipes and is still read to the end. */
        kill_group(j);
        break;
      }
    }
  }
}

/*
 * Every way out kills the commands' groups first: nothing else will. A
 * gateway that died is usually seen as EOF on the requests, but a reply
 * written in the same turn meets EPIPE first; a command started for it would
 * otherwise live on, reparented to init, for as long as it hangs.
 */
static void die(int code) {
  for (size_t i = 0; i < njobs; i++) kill_group(jobs[i]);
  _exit(code);
}

static void kill_all_and_exit(void) { die(0); }

struct reader {
  const unsigned char *p;
  size_t left;
  int bad;
};

static uint32_t r32(struct reader *r) {
  if (r->left < 4) {
    r->bad = 1;
    return 0;
  }
  uint32_t v = get32(r->p);
  r->p += 4;
  r->left -= 4;
  return v;
}

static char *rstr(struct reader *r) {
  uint32_t n = r32(r);
  if (r->bad || n > r->left) {
    r->bad = 1;
    return NULL;
  }
  char *s = malloc((size_t)n + 1);
  if (!s) die(4);
  memcpy(s, r->p, n);
  s[n] = 0;
  r->p += n;
  r->left -= n;
  return s;
}

static void free_vec(char **v, size_t n) {
  if (!v) return;
  for (size_t i = 0; i < n; i++) free(v[i]);
  free(v);
}

/* A frame's fixed words (the type included) into w[0..n). */
static void rwords(struct reader *r, uint32_t *w, size_t n) {
  for (size_t i = 0; i < n; i++) w[i] = r32(r);
}

static void handle_run(struct reader *r, int kept) {
  uint32_t w[SP_RUN_KEEP_WORDS]; /* the longer of the two run layouts */
  uint32_t id, timeout, cap, slot = UINT32_MAX, held = 0, argc, envc;
  if (kept) {
    rwords(r, w, SP_RUN_KEEP_WORDS);
    id = w[SP_RUN_KEEP_ID], timeout = w[SP_RUN_KEEP_TIMEOUT_MS], cap = w[SP_RUN_KEEP_CAP];
    slot = w[SP_RUN_KEEP_SLOT], held = w[SP_RUN_KEEP_HELD];
    argc = w[SP_RUN_KEEP_ARGC], envc = w[SP_RUN_KEEP_ENVC];
  } else {
    rwords(r, w, SP_RUN_WORDS);
    id = w[SP_RUN_ID], timeout = w[SP_RUN_TIMEOUT_MS], cap = w[SP_RUN_CAP];
    argc = w[SP_RUN_ARGC], envc = w[SP_RUN_ENVC];
  }
  if (r->bad || argc == 0 || argc > r->left / 4 || envc > r->left / 4 || (kept && slot >= SP_KEEP_SLOTS)) die(2);
  char *path = rstr(r);
  char **argv = calloc((size_t)argc + 1, sizeof *argv);
  char **envp = calloc((size_t)envc + 1, sizeof *envp);
  if (!argv || !envp) die(4);
  for (uint32_t i = 0; i < argc; i++) argv[i] = rstr(r);
  for (uint32_t i = 0; i < envc; i++) envp[i] = rstr(r);
  if (r->bad) die(2);

  int out[2] = {-1, -1}, err[2] = {-1, -1};
  int rc = 0;
  pid_t pid = -1;
  if (pipe2(out, O_CLOEXEC) < 0 || pipe2(err, O_CLOEXEC) < 0) {
    rc = errno;
  } else {
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    sigset_t all, none;
    sigfillset(&all);
    sigemptyset(&none);
    posix_spawn_file_actions_init(&fa);
    posix_spawnattr_init(&at);
    /* stdin /dev/null; the pipes' write ends become 1 and 2 (dup2 clears
       CLOEXEC on the copies only); every other descriptor is CLOEXEC. */
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, out[1], 1);
    posix_spawn_file_actions_adddup2(&fa, err[1], 2);
    posix_spawnattr_setpgroup(&at, 0);
    posix_spawnattr_setsigmask(&at, &none);
    posix_spawnattr_setsigdefault(&at, &all);
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    rc = posix_spawn(&pid, path, &fa, &at, argv, envp);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
  }
  if (out[1] >= 0) close(out[1]);
  if (err[1] >= 0) close(err[1]);
  free(path);
  free_vec(argv, argc);
  free_vec(envp, envc);
  if (rc != 0) {
    if (out[0] >= 0) close(out[0]);
    if (err[0] >= 0) close(err[0]);
    reply_done(id, rc, 0, -1, 0, NULL, NULL);
    return;
  }
  fcntl(out[0], F_SETFL, O_NONBLOCK);
  fcntl(err[0], F_SETFL, O_NONBLOCK);
  struct job *j = calloc(1, sizeof *j);
  if (!j) {
    kill(-pid, SIGKILL); /* not in the job list yet: die() would miss it */
    die(4);
  }
  j->id = id;
  j->pid = pid;
  j->cap = cap;
  j->slot = kept ? (int)slot : -1;
  j->held = held;
  /* No deadline: a statfs stuck in the kernel cannot be killed anyway; it
     stays one slot here until its call returns. */
  j->deadline = timeout == SP_NO_TIMEOUT ? INT64_MAX : now_ms() + timeout;
  j->out.fd = out[0];
  j->err.fd = err[0];
  if (njobs == jobs_cap) {
    jobs_cap = jobs_cap ? jobs_cap * 2 : 16;
    struct job **nj = realloc(jobs, jobs_cap * sizeof *nj);
    if (!nj) {
      kill(-pid, SIGKILL);
      die(4);
    }
    jobs = nj;
  }
  jobs[njobs++] = j;
  reply_started(id, pid);
}

static void handle_kill(struct reader *r) {
  uint32_t w[SP_KILL_WORDS];
  rwords(r, w, SP_KILL_WORDS);
  uint32_t id = w[SP_KILL_ID];
  if (r->bad) die(2);
  for (size_t i = 0; i < njobs; i++)
    if (jobs[i]->id == id) kill_group(jobs[i]);
}

static unsigned char *inbuf;
static size_t inlen, incap;

/* Handles every complete frame; returns 0 at EOF on stdin. */
static int read_requests(void) {
  if (incap - inlen < READ_CHUNK) {
    incap = incap ? incap * 2 : 2 * READ_CHUNK;
    unsigned char *nb = realloc(inbuf, incap);
    if (!nb) die(4);
    inbuf = nb;
  }
  ssize_t n = read(0, inbuf + inlen, incap - inlen);
  if (n < 0) return errno == EINTR || errno == EAGAIN;
  if (n == 0) return 0;
  inlen += (size_t)n;
  size_t off = 0;
  while (inlen - off >= 4) {
    uint32_t len = get32(inbuf + off);
    if (len > SP_MAX_FRAME || len < 4) die(2);
    if (inlen - off - 4 < len) break;
    struct reader r = {inbuf + off + 4, len, 0};
    uint32_t type = get32(r.p); /* each handler reads its frame's words from the type on */
    if (type == SP_REQ_RUN) handle_run(&r, 0);
    else if (type == SP_REQ_RUN_KEEP) handle_run(&r, 1);
    else if (type == SP_REQ_KILL) handle_kill(&r);
    else die(2);
    off += 4 + len;
  }
  memmove(inbuf, inbuf + off, inlen - off);
  inlen -= off;
  return 1;
}

int main(void) {
  /* An output buffer of hundreds of KiB is allocated and freed every few
     seconds. glibc maps one that size and unmaps it on free, but after the
     first such free it raises its threshold to that size and serves the next
     ones from its heap, which it keeps: the process would hold a spare copy of
     the largest output for good. A fixed threshold keeps them mapped. */
#ifdef M_MMAP_THRESHOLD
  mallopt(M_MMAP_THRESHOLD, 128 * 1024);
#endif
  unsigned char key[16];
  have_digest_key = getrandom(key, sizeof key, GRND_NONBLOCK) == (ssize_t)sizeof key;
  if (have_digest_key) {
    digest_key[0] = sip_le64(key);
    digest_key[1] = sip_le64(key + 8);
  }
  /* Nothing the gateway left open reaches a command: close all but 0-2. */
  long maxfd = sysconf(_SC_OPEN_MAX);
  if (maxfd < 0 || maxfd > 65536) maxfd = 65536;
  for (int fd = 3; fd < maxfd; fd++) close(fd);
  /* Commands must not depend on where the gateway was started from. */
  if (chdir("/") < 0) return 5;

  if (pipe2(sigpipe_fds, O_CLOEXEC | O_NONBLOCK) < 0) return 5;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_sigchld;
  sa.sa_flags = SA_RESTART | SA_NOCLDSTOP;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGCHLD, &sa, NULL);
  signal(SIGPIPE, SIG_IGN); /* a vanished gateway is seen as EPIPE / EOF */
  fcntl(0, F_SETFD, FD_CLOEXEC);
  fcntl(1, F_SETFD, FD_CLOEXEC);

  struct pollfd *pfd = NULL;
  size_t pfd_cap = 0;
  for (;;) {
    int64_t now = now_ms();
    /* Deadlines first: a timeout or an expired grace acts even when no
       descriptor is ready. */
    for (size_t i = 0; i < njobs;) {
      struct job *j = jobs[i];
      if (!j->deadline_fired && now >= j->deadline) {
        j->deadline_fired = 1;
        if (!j->exited) j->timed_out = 1;
        kill_group(j);
        start_grace(j, now);
      }
      if ((j->exited && j->out.fd < 0 && j->err.fd < 0) || (j->grace && now >= j->grace)) {
        finish(i);
        continue;
      }
      i++;
    }
    int64_t wait = -1;
    for (size_t i = 0; i < njobs; i++) {
      struct job *j = jobs[i];
      int64_t at = j->deadline_fired ? j->grace : j->deadline;
      if (j->grace && j->grace < at) at = j->grace;
      int64_t d = at - now;
      if (d < 0) d = 0;
      if (wait < 0 || d < wait) wait = d;
    }
    size_t need = 2 + 2 * njobs;
    if (need > pfd_cap) {
      pfd_cap = need * 2;
      pfd = realloc(pfd, pfd_cap * sizeof *pfd);
      if (!pfd) die(4);
    }
    size_t n = 0;
    pfd[n++] = (struct pollfd){.fd = 0, .events = POLLIN};
    pfd[n++] = (struct pollfd){.fd = sigpipe_fds[0], .events = POLLIN};
    for (size_t i = 0; i < njobs; i++) {
      pfd[n++] = (struct pollfd){.fd = jobs[i]->out.fd, .events = POLLIN};
      pfd[n++] = (struct pollfd){.fd = jobs[i]->err.fd, .events = POLLIN};
    }
    int pr = poll(pfd, n, wait > INT_MAX ? INT_MAX : (int)wait);
    if (pr < 0) {
      if (errno == EINTR) continue;
      die(6);
    }
    now = now_ms();
    if (pfd[1].revents) {
      char b[64];
      while (read(sigpipe_fds[0], b, sizeof b) > 0) {
      }
      reap();
    }
    /* Fresh fds are skipped by a negative fd in pfd (poll ignores them). */
    size_t before = njobs;
    for (size_t i = 0; i < before && i < njobs; i++) {
      struct job *j = jobs[i];
      if (pfd[2 + 2 * i].revents && j->out.fd >= 0 && pfd[2 + 2 * i].fd == j->out.fd) pump(j, &j->out, now);
      if (pfd[3 + 2 * i].revents && j->err.fd >= 0 && pfd[3 + 2 * i].fd == j->err.fd) pump(j, &j->err, now);
    }
    if (pfd[0].revents) {
      if (!read_requests()) kill_all_and_exit();
    }
  }
}
