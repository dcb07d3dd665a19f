// A stand-in for coreutils' `stat -f -c FORMAT -- PATH...` as the statfs
// prober runs it (one path, or a batch of them): for each path in order, the
// format with `%t` as bd00bd0 (a Lustre mount's type) and `%n` as the path
// on stdout, or one error line on stderr (and exit 1 once all are done), as
// stat does. Each path is appended (`PID PATH`) to $FAKE_STAT_LOG when set.

export interface FakeStatOptions {
  /** A shell case pattern: a matching path waits while the file $FAKE_STAT_HANG exists. */
  hang?: string;
  /** Shell case pattern → strerror text: a matching path fails with it. */
  failures?: Readonly<Record<string, string>>;
}

export function fakeStatScript(opts: FakeStatOptions = {}): string {
  const fail = Object.entries(opts.failures ?? {})
    .map(([pattern, text]) => `    ${pattern}) echo "stat: cannot read file system information for '$p': ${text}" >&2; rc=1; continue ;;\n`)
    .join("");
  return [
    "#!/bin/sh",
    'fmt="$3"; shift 4',
    "rc=0",
    'for p; do',
    '  [ -z "$FAKE_STAT_LOG" ] || echo "$$ $p" >> "$FAKE_STAT_LOG"',
    ...(opts.hang ? [`  case "$p" in ${opts.hang}) while [ -e "$FAKE_STAT_HANG" ]; do sleep 0.05; done ;; esac`] : []),
    ...(fail ? [`  case "$p" in\n${fail}  esac`] : []),
    '  case "$fmt" in *%n*) echo "bd00bd0 $p" ;; *) echo bd00bd0 ;; esac',
    "done",
    "exit $rc",
    "",
  ].join("\n");
}
