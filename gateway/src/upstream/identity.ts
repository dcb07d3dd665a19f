import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { GetPluginInfoRequestSchema, GetPluginInfoResponseSchema } from "../../gen/csi/v1/csi_pb.js";
import type { Logger } from "../observability/logger.js";
import type { UpstreamConnection } from "./connection.js";
import { GRPC_OK, statusName } from "../transport/grpc-wire.js";
import { GET_PLUGIN_INFO_PATH } from "./methods.js";
import type { UpstreamMetrics } from "./metrics.js";
import type { UpstreamStatus } from "./status.js";
import { unaryCall } from "../rawcall/client.js";

const REQUEST = toBinary(GetPluginInfoRequestSchema, create(GetPluginInfoRequestSchema));

export interface IdentityWatchOptions {
  conn: UpstreamConnection;
  status: UpstreamStatus;
  metrics: UpstreamMetrics;
  logger: Logger;
  /** Between attempts while the driver is not answering (default 1 s). */
  pollMs?: number;
  /** Bound on one attempt (default 3 s). */
  timeoutMs?: number;
}

/**
 * Asks the upstream driver's GetPluginInfo until it answers. Until then
 * probegate answers GetPluginInfo itself from --driver-name: the registrar and
 * the livenessprobe sidecar call it once at start and exit if it fails, and a
 * driver that installs its Lustre client first is not listening for minutes.
 */
export class IdentityWatch {
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  private lastProblem = "";

  constructor(private readonly opts: IdentityWatchOptions) {}

  start(): void {
    void this.attempt();
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
  }

  private async attempt(): Promise<void> {
    if (this.stopped) return;
    const { conn, status, logger, metrics } = this.opts;
    const r = await unaryCall(conn, GET_PLUGIN_INFO_PATH, REQUEST, this.opts.timeoutMs ?? 3000);
    if (this.stopped) return;
    let problem: string | undefined;
    if (r.kind === "unreachable") {
      problem = `not answering yet: ${r.error.message}`;
    } else {
      status.markAnswered();
      if (r.status !== GRPC_OK) problem = `GetPluginInfo failed: ${statusName(r.status)}: ${r.message}`;
      else {
        let name = "";
        try {
          name = fromBinary(GetPluginInfoResponseSchema, r.body ?? new Uint8Array()).name;
        } catch (err) {
          problem = `undecodable GetPluginInfo reply: ${(err as Error).message}`;
        }
        if (!problem && name === "") problem = "GetPluginInfo returned an empty name";
        if (!problem) {
          status.setUpstreamName(name);
          // A label, so bounded: CSI caps the name at 63 characters; a driver that ignores that is cut.
          metrics.nameMatch.set({ upstream_name: name.slice(0, 128), driver_name: status.configuredDriverName }, status.nameMismatch ? 0 : 1);
          if (status.nameMismatch) {
            metrics.nameMismatches.inc();
            logger.warn(
              { upstreamDriverName: name, driverName: status.configuredDriverName },
              "upstream driver name differs from --driver-name; GetPluginInfo now forwards the upstream's",
            );
          } else logger.info({ driverName: name }, "upstream driver answered GetPluginInfo; forwarding it from now on");
          return;
        }
      }
    }
    // Logged when it changes, not on every attempt: a driver may take minutes to start.
    if (problem !== this.lastProblem) {
      this.lastProblem = problem;
      logger.info({ upstream: conn.display, problem }, "upstream driver identity not known yet; answering GetPluginInfo from --driver-name");
    }
    this.timer = setTimeout(() => void this.attempt(), this.opts.pollMs ?? 1000);
    this.timer.unref();
  }
}
