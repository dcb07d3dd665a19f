// The Connect and gRPC-Web face of the routes the core answers from memory:
// connect-es speaks those protocols (JSON, compression, deadlines, gRPC-Web
// trailers); the answer is the route's own, so every protocol says the same.
import { fromBinary, toBinary } from "@bufbuild/protobuf";
import { Code, ConnectError, createConnectRouter, type ContextValues, type HandlerContext } from "@connectrpc/connect";
import type { Compression, UniversalHandler } from "@connectrpc/connect/protocol";
import type { StreamContext } from "../transport/stream-route.js";
import { NO_TIMEOUT } from "./request.js";
import type { UnaryRoute } from "./route.js";

const READ_OPTIONS = { readUnknownFields: false } as const;

export interface TwinOptions {
  acceptCompression: Compression[];
  shutdown: AbortSignal;
  /** The call's listener and surface, from the context values the Connect side sets. */
  contextOf(values: ContextValues): StreamContext;
}

/** Connect's handler per path, for every route that names its method. */
export function connectTwins(routes: readonly UnaryRoute[], opts: TwinOptions): Map<string, UniversalHandler> {
  const router = createConnectRouter({
    acceptCompression: opts.acceptCompression,
    binaryOptions: { readUnknownFields: false },
    shutdownSignal: opts.shutdown,
  });
  for (const route of routes) {
    const method = route.method;
    if (!method) continue;
    const impl = async (req: unknown, ctx: HandlerContext) => {
      if (route.takes && !route.takes()) throw new ConnectError(route.elsewhere ?? `${route.path} is not answered here`, Code.Unimplemented);
      const request = Buffer.from(toBinary(method.input, req as never));
      const reply = await route.answer(request, opts.contextOf(ctx.values), ctx.timeoutMs() ?? NO_TIMEOUT);
      if (reply === undefined) throw new ConnectError(`${route.path} has no answer`, Code.Internal);
      if ("code" in reply) throw new ConnectError(reply.message, reply.code);
      return fromBinary(method.output, reply.frame.subarray(5), READ_OPTIONS);
    };
    router.rpc(method, impl as never, { readMaxBytes: route.maxBytes });
  }
  return new Map(router.handlers.map((h) => [h.requestPath, h]));
}
