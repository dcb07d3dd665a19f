// Volume operations as the forwarded calls show them (gateway mode): one entry
// per (method, volume, path) from its first attempt until an attempt succeeds.
// The kubelet's deadline is shorter than a hang, so a stuck unmount is a series
// of attempts that time out or are refused (ABORTED while the driver holds its
// per-volume lock), never one long call: the table counts them. It is fed by
// the raw-call core's observer (a finished call: path, request, status), and
// touches no file, command or upstream on that path: one request decode and a
// map update. Bounded: at most `maxOperations` entries; past it a new
// operation is counted and not tracked, never an old one evicted.

import { fromBinary, type DescMessage } from "@bufbuild/protobuf";
import {
  NodeExpandVolumeRequestSchema,
  NodePublishVolumeRequestSchema,
  NodeStageVolumeRequestSchema,
  NodeUnpublishVolumeRequestSchema,
  NodeUnstageVolumeRequestSchema,
} from "../../gen/csi/v1/csi_pb.js";
import { Code } from "@connectrpc/connect";
import { knownStatusName } from "../support/grpc-status.js";
import { volumeRefProblem } from "./registry.js";

/**
 * A forwarded mount-API call once it finished, as the proxy's observer reports
 * it (rawcall/route.ts's CallRecord has this shape; it is written here so the
 * health room does not import the transport it is fed by).
 */
export interface FinishedCall {
  /** "/csi.v1.Node/NodeUnpublishVolume" */
  path: string;
  /** The request message, when it was read whole. */
  request: Uint8Array | undefined;
  /** Final grpc-status; NaN when none could be told. */
  status: number;
  durationMs: number;
}

export const DEFAULT_MAX_OPERATIONS = 4096;
export const DEFAULT_OPERATION_STUCK_AFTER_MS = 5 * 60_000;

export type OperationMethod = "NodeStageVolume" | "NodeUnstageVolume" | "NodePublishVolume" | "NodeUnpublishVolume" | "NodeExpandVolume";
export const OPERATION_METHODS: readonly OperationMethod[] = ["NodeStageVolume", "NodeUnstageVolume", "NodePublishVolume", "NodeUnpublishVolume", "NodeExpandVolume"];

/** The one-word reason of a stuck operation of each method (docs/health.md lists what to do for each). */
export const STUCK_REASON: Record<OperationMethod, string> = {
  NodeStageVolume: "StageStuck",
  NodeUnstageVolume: "UnstageStuck",
  NodePublishVolume: "PublishStuck",
  NodeUnpublishVolume: "UnpublishStuck",
  NodeExpandVolume: "ExpandStuck",
};

const READ = { readUnknownFields: false } as const;

/** Each method's request and the field that holds its path. */
const REQUESTS = {
  NodeStageVolume: [NodeStageVolumeRequestSchema, "stagingTargetPath"],
  NodeUnstageVolume: [NodeUnstageVolumeRequestSchema, "stagingTargetPath"],
  NodePublishVolume: [NodePublishVolumeRequestSchema, "targetPath"],
  NodeUnpublishVolume: [NodeUnpublishVolumeRequestSchema, "targetPath"],
  NodeExpandVolume: [NodeExpandVolumeRequestSchema, "volumePath"],
} as const satisfies Record<OperationMethod, readonly [DescMessage, string]>;

/** The volume and path a mount-API request names. Throws on bytes that are not the request. */
function target(method: OperationMethod, request: Uint8Array): { volumeId: string; path: string } {
  const [schema, field] = REQUESTS[method];
  const r = fromBinary(schema as DescMessage, request, READ) as unknown as Record<string, string>;
  return { volumeId: r.volumeId ?? "", path: r[field] ?? "" };
}

export interface Operation {
  method: OperationMethod;
  volumeId: string;
  path: string;
  /** Epoch ms the first attempt began. */
  firstAt: number;
  attempts: number;
  /** Attempts refused (ABORTED: the driver's per-volume lock) or that ran out of time (DEADLINE_EXCEEDED, CANCELLED). */
  refusedOrTimedOut: number;
  /** The last attempt's status name (UNKNOWN when none could be told). */
  last: string;
  /** Set once the operation was seen stuck (for transitions). */
  stuck: boolean;
}

export interface OperationTransition {
  kind: "stuck" | "ended";
  op: Readonly<Operation>;
}

export interface OperationTableOptions {
  stuckAfterMs?: number;
  maxOperations?: number;
  now?: () => number;
}

export class OperationTable {
  readonly stuckAfterMs: number;
  private readonly max: number;
  private readonly now: () => number;
  private readonly ops = new Map<string, Operation>();
  private readonly listeners = new Set<(t: OperationTransition[]) => void>();
  /** Operations not tracked: the table was full, or the request named no usable volume. */
  untracked = 0;

  constructor(opts: OperationTableOptions = {}) {
    this.stuckAfterMs = opts.stuckAfterMs ?? DEFAULT_OPERATION_STUCK_AFTER_MS;
    this.max = opts.maxOperations ?? DEFAULT_MAX_OPERATIONS;
    this.now = opts.now ?? Date.now;
  }

  /** The raw-call core's observer: a finished forwarded call. Never throws. */
  observe(call: FinishedCall): void {
    const slash = call.path.lastIndexOf("/");
    if (!call.path.startsWith("/csi.v1.Node/")) return;
    const method = call.path.slice(slash + 1) as OperationMethod;
    if (!(method in STUCK_REASON)) return;
    if (!call.request) {
      this.untracked++;
      return;
    }
    let t;
    try {
      t = target(method, call.request);
    } catch {
      this.untracked++;
      return;
    }
    if (volumeRefProblem({ volumeId: t.volumeId, targetPath: t.path }) !== "") {
      this.untracked++;
      return;
    }
    const key = `${method}\0${t.volumeId}\0${t.path}`;
    if (call.status === 0) {
      // Done: this operation, and any other on the same volume and path (an unpublish that succeeded ends a publish that did not).
      this.forget(t.volumeId, t.path);
      return;
    }
    let op = this.ops.get(key);
    if (!op) {
      if (this.ops.size >= this.max) {
        this.untracked++;
        return;
      }
      const began = this.now() - (Number.isFinite(call.durationMs) ? Math.max(0, call.durationMs) : 0);
      op = { method, volumeId: t.volumeId, path: t.path, firstAt: began, attempts: 0, refusedOrTimedOut: 0, last: "UNKNOWN", stuck: false };
      this.ops.set(key, op);
    }
    op.attempts++;
    if (call.status === Code.Aborted || call.status === Code.DeadlineExceeded || call.status === Code.Canceled) op.refusedOrTimedOut++;
    op.last = knownStatusName(call.status) ?? "UNKNOWN";
  }

  /** Drops every operation on that volume and path (an attempt succeeded, or the volume was forgotten). */
  forget(volumeId: string, path?: string): void {
    const ended: OperationTransition[] = [];
    for (const [k, op] of this.ops) {
      if (op.volumeId !== volumeId || (path !== undefined && op.path !== path)) continue;
      this.ops.delete(k);
      if (op.stuck) ended.push({ kind: "ended", op });
    }
    if (ended.length) this.emit(ended);
  }

  isStuck(op: Operation, at = this.now()): boolean {
    return at - op.firstAt >= this.stuckAfterMs;
  }

  /** Marks operations that became stuck since the last tick and says so (a timer calls it; reading never does). */
  tick(): void {
    const at = this.now();
    const became: OperationTransition[] = [];
    for (const op of this.ops.values()) {
      if (!op.stuck && this.isStuck(op, at)) {
        op.stuck = true;
        became.push({ kind: "stuck", op });
      }
    }
    if (became.length) this.emit(became);
  }

  all(): readonly Operation[] {
    return [...this.ops.values()];
  }

  stuck(): Operation[] {
    return this.all().filter((op) => op.stuck);
  }

  /** The stuck operations on one volume, oldest first. */
  stuckOn(volumeId: string): Operation[] {
    const out: Operation[] = [];
    for (const op of this.ops.values()) if (op.stuck && op.volumeId === volumeId) out.push(op);
    return out.sort((a, b) => a.firstAt - b.firstAt);
  }

  size(): number {
    return this.ops.size;
  }

  subscribe(fn: (t: OperationTransition[]) => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  private emit(t: OperationTransition[]): void {
    for (const fn of this.listeners) {
      try {
        fn(t);
      } catch {
        // A listener's bug must not stop tracking.
      }
    }
  }
}

/** "6m12s", "45s": how long, for people. */
export function humanDuration(ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000));
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const r = s % 60;
  return h ? `${h}h${m}m` : m ? `${m}m${r}s` : `${r}s`;
}

/** One line about a stuck operation: method, path, for how long, attempts and how they ended. */
export function describeOperation(op: Operation, now: number): string {
  return (
    `${op.method} of ${op.path || "(no path)"} pending for ${humanDuration(now - op.firstAt)}: ` +
    `${op.attempts} attempt${op.attempts === 1 ? "" : "s"}, ${op.refusedOrTimedOut} refused (ABORTED) or timed out, last ${op.last}`
  );
}
