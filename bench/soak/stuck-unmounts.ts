// The stuck-unmount fault (issue 41) on the gateway-mode process. Each
// episode mounts two volumes under the kubelet directory on the fake node
// (gateway/test/helpers/fake-umount.ts) and hangs their clients: a Lustre
// mount that --unstick=unmount may end, and a tmpfs it must never touch. The
// soak then retries NodeUnpublishVolume for both as the kubelet does (a short
// deadline, again every second) through the gateway in front of the upstream
// driver, whose umount blocks under its per-volume lock, and reads each
// volume's NodeGetVolumeHealth. After a while the servers "come back" (the
// hang ends by itself), so every episode ends. The oracle holds the gateway to:
//   - reported stuck (UnpublishStuck) within --operation-stuck-after + a tick + the grace;
//   - the report gone once an attempt succeeded (no answer sent after the success keeps it);
//   - with --unstick, the Lustre path ended by probegate's umount -f (or -l) before the servers came back;
//   - nothing but the allowed path ever unmounted by probegate, and nothing at all without --unstick.
// Episodes during which the gateway restarted lose its table and are not judged.
import http2 from "node:http2";
import path from "node:path";
import { create, toBinary } from "@bufbuild/protobuf";
import { NodeUnpublishVolumeRequestSchema } from "../../gateway/gen/csi/v1/csi_pb.js";
import type { FakeNode } from "../../gateway/test/helpers/fake-umount.js";
import { connectSession, grpcUnary } from "./grpc-call.js";
import type { Recorder } from "./recorder.js";
import { fromCall, HealthCalls, watched, type Target } from "./traffic.js";

/** The gateway-mode process's --operation-stuck-after and --unstick-after in the soak. */
export const STUCK_AFTER_MS = 3_000;
export const UNSTICK_AFTER_MS = 6_000;
/** How long an attempt waits (the kubelet's deadline: shorter than the hang is all that matters). */
const ATTEMPT_DEADLINE_MS = 1_000;
const RETRY_EVERY_MS = 1_000;
/** One turn of the retry loop at most: an attempt, the health reads, the pause. */
const LOOP_MS = ATTEMPT_DEADLINE_MS + RETRY_EVERY_MS + 1_000;
/** The gateway looks at stuck-ness every quarter of --operation-stuck-after, the unsticker every quarter of --unstick-after. */
const STUCK_TICK_MS = STUCK_AFTER_MS / 4;
const UNSTICK_TICK_MS = UNSTICK_AFTER_MS / 4;

interface Vol {
  id: string;
  path: string;
  fsType: "lustre" | "tmpfs";
  /** --unstick=unmount may end it (a Lustre mount under the kubelet directory). */
  allowed: boolean;
  firstAt?: number;
  reportedAt?: number;
  doneAt?: number;
  clearedAt?: number;
}

export interface StuckCounts {
  unstick: boolean;
  episodes: number;
  /** Episodes not judged: the gateway restarted, or the run ended during them. */
  unjudged: number;
  attempts: number;
  /** Volumes seen reported stuck. */
  reported: number;
  /** Volumes whose report went once their unmount succeeded. */
  cleared: number;
  /** Lustre volumes ended by probegate (umount -f / -l) before their servers came back. */
  endedByProbegate: number;
  /** Volumes that ended when the hang did (the tmpfs always; everything without --unstick). */
  endedByRecovery: number;
  /** probegate's escalation steps seen on the fake node, by flag. */
  steps: Record<string, number>;
  violations: Array<{ at: number; what: string }>;
}

export class StuckUnmounts {
  readonly counts: StuckCounts;
  private session: http2.ClientHttp2Session | undefined;
  private readonly health: HealthCalls;

  constructor(
    private readonly node: FakeNode,
    private readonly kubeletDir: string,
    private readonly target: Target,
    private readonly rec: Recorder,
    private readonly o: { unstick: boolean; graceMs: number },
  ) {
    this.counts = { unstick: o.unstick, episodes: 0, unjudged: 0, attempts: 0, reported: 0, cleared: 0, endedByProbegate: 0, endedByRecovery: 0, steps: {}, violations: [] };
    this.health = new HealthCalls(target);
  }

  /** One episode; returns when both volumes ended and were seen cleared, or at `until` (the run's end). */
  async episode(until: () => boolean): Promise<void> {
    const n = this.counts.episodes++;
    const vols: Vol[] = (["lustre", "tmpfs"] as const).map((fsType) => ({
      id: `stuck-${fsType}-${n}`,
      path: path.join(this.kubeletDir, "pods", `5011a000-0000-4000-8000-1${String(n).padStart(11, "0")}`, "volumes", "kubernetes.io~csi", `pv-stuck-${fsType}`, "mount"),
      fsType,
      allowed: fsType === "lustre",
    }));
    const callsBefore = this.node.calls().length;
    for (const v of vols) {
      this.node.mount(v.path, v.fsType, v.fsType === "tmpfs" ? "tmpfs" : undefined);
      // Every other episode -f cannot end it (busy): probegate goes on to -l.
      this.node.hang(v.path, v.allowed && n % 2 === 1 ? "lazy-only" : "force");
    }
    const startedAt = Date.now();
    const starts = this.target.proc.starts;
    // The servers come back once --unstick has had its chance (with a tick and the grace to spare).
    const recoverAt = startedAt + UNSTICK_AFTER_MS + UNSTICK_TICK_MS + LOOP_MS + this.o.graceMs;
    const giveUpAt = recoverAt + 15_000 + this.o.graceMs;
    let recovered = false;
    let cut = false;
    while (vols.some((v) => v.doneAt === undefined || v.clearedAt === undefined)) {
      if (until()) {
        cut = true;
        break;
      }
      const now = Date.now();
      if (!recovered && now >= recoverAt) {
        recovered = true;
        for (const v of vols) this.node.recover(v.path);
      }
      if (now >= giveUpAt) break;
      await Promise.all(vols.filter((v) => v.doneAt === undefined).map((v) => this.attempt(v)));
      await Promise.all(vols.map((v) => this.readHealth(v)));
      await new Promise((r) => setTimeout(r, RETRY_EVERY_MS));
    }
    // Whatever is left: the hang ends and the mounts go, so the next episode starts clean.
    for (const v of vols) {
      this.node.recover(v.path);
      this.node.unmount(v.path);
    }
    const steps = this.node.calls().slice(callsBefore).filter((a) => a[0] === "-f" || a[0] === "-l");
    for (const [flag] of steps) this.counts.steps[flag!] = (this.counts.steps[flag!] ?? 0) + 1;
    // Never judged away: probegate unmounting what it may not is a violation whatever else happened.
    for (const [flag, p] of steps) {
      const allowed = vols.some((v) => v.allowed && v.path === p);
      if (!this.o.unstick) this.violation(`umount ${flag} ${p} run without --unstick`);
      else if (!allowed) this.violation(`umount ${flag} ${p} run on a path --unstick must not touch`);
    }
    for (const v of vols) {
      if (v.reportedAt !== undefined) this.counts.reported++;
      if (v.clearedAt !== undefined) this.counts.cleared++;
      const byProbegate = v.allowed && steps.some(([, p]) => p === v.path) && v.doneAt !== undefined && v.doneAt < recoverAt;
      if (byProbegate) this.counts.endedByProbegate++;
      else if (v.doneAt !== undefined) this.counts.endedByRecovery++;
    }
    if (cut || this.target.proc.starts !== starts) {
      this.counts.unjudged++;
      return;
    }
    const reportBound = STUCK_AFTER_MS + STUCK_TICK_MS + LOOP_MS + this.o.graceMs;
    for (const v of vols) {
      const first = v.firstAt ?? startedAt;
      const pending = (v.doneAt ?? Date.now()) - first;
      if (pending > reportBound && !(v.reportedAt !== undefined && v.reportedAt - first <= reportBound)) {
        this.violation(`${v.id}: pending ${pending} ms, not reported stuck within ${reportBound} ms (seen ${v.reportedAt === undefined ? "never" : `after ${v.reportedAt - first} ms`})`);
      }
      if (v.doneAt === undefined) this.violation(`${v.id}: its unmount never succeeded, ${giveUpAt - startedAt} ms after the episode began`);
      else if (v.clearedAt === undefined) this.violation(`${v.id}: still reported stuck after its unmount succeeded`);
      if (this.o.unstick && v.allowed && !steps.some(([, p]) => p === v.path)) this.violation(`${v.id}: not ended by --unstick=unmount before its servers came back`);
    }
  }

  close(): void {
    this.session?.destroy();
    this.health.close();
  }

  private async attempt(v: Vol): Promise<void> {
    const req = toBinary(NodeUnpublishVolumeRequestSchema, create(NodeUnpublishVolumeRequestSchema, { volumeId: v.id, targetPath: v.path }));
    if (!this.session || this.session.closed || this.session.destroyed) this.session = connectSession({ socketPath: this.target.proc.spec.socket });
    const session = this.session;
    v.firstAt ??= Date.now();
    const { r, outage } = await watched(this.target, () => grpcUnary(session, "/csi.v1.Node/NodeUnpublishVolume", req, { timeoutMs: ATTEMPT_DEADLINE_MS, capMs: 30_000 }));
    if (r.kind === "transport") session.destroy();
    this.counts.attempts++;
    this.rec.record("stuck-unpublish", { ...fromCall(r), ms: r.ms, deadlineMs: ATTEMPT_DEADLINE_MS, outage });
    if (r.kind === "ok") v.doneAt = Date.now();
  }

  private async readHealth(v: Vol): Promise<void> {
    await this.health.volume(this.rec, v.id, v.path, (sentAt, entries) => {
      const stuck = entries.some((e) => e.reason === "UnpublishStuck");
      if (stuck && v.reportedAt === undefined && v.doneAt === undefined) v.reportedAt = sentAt;
      if (v.doneAt === undefined || sentAt <= v.doneAt) return;
      if (stuck) this.violation(`${v.id}: NodeGetVolumeHealth sent ${sentAt - v.doneAt} ms after its unmount succeeded still says UnpublishStuck`);
      else v.clearedAt ??= sentAt;
    });
  }

  private violation(what: string): void {
    if (this.counts.violations.length < 50) this.counts.violations.push({ at: Date.now(), what });
  }
}
