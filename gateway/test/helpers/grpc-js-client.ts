import { create, fromBinary, toBinary, type DescMessage, type DescService, type MessageShape } from "@bufbuild/protobuf";
import * as grpc from "@grpc/grpc-js";

/**
 * A @grpc/grpc-js client for a protobuf-es service descriptor: grpc-js is
 * not Connect, so it checks our wire format independently of our own stack.
 */
export function grpcJsClient(service: DescService, target: string, options: grpc.ClientOptions = {}): grpc.Client & Record<string, Function> {
  const def: grpc.ServiceDefinition = {};
  for (const m of service.methods) {
    const req = m.input as DescMessage;
    const res = m.output as DescMessage;
    def[m.localName] = {
      path: `/${service.typeName}/${m.name}`,
      requestStream: m.methodKind === "client_streaming" || m.methodKind === "bidi_streaming",
      responseStream: m.methodKind === "server_streaming" || m.methodKind === "bidi_streaming",
      requestSerialize: (msg: MessageShape<DescMessage>) => Buffer.from(toBinary(req, create(req, msg))),
      requestDeserialize: (b: Buffer) => fromBinary(req, b),
      responseSerialize: (msg: MessageShape<DescMessage>) => Buffer.from(toBinary(res, create(res, msg))),
      responseDeserialize: (b: Buffer) => fromBinary(res, b),
    };
  }
  const Ctor = grpc.makeGenericClientConstructor(def, service.name);
  return new Ctor(target, grpc.credentials.createInsecure(), options) as unknown as grpc.Client & Record<string, Function>;
}

/** Promisified unary call; rejects with the grpc-js ServiceError. */
export function unary<T>(client: Record<string, Function>, method: string, req: unknown, deadlineMs = 10_000): Promise<T> {
  return new Promise((resolve, reject) => {
    client[method](req, { deadline: Date.now() + deadlineMs }, (err: grpc.ServiceError | null, res: T) =>
      err ? reject(err) : resolve(res),
    );
  });
}
