import { toBinary, type DescFile, type DescMessage } from "@bufbuild/protobuf";
import { FileDescriptorProtoSchema } from "@bufbuild/protobuf/wkt";
import { Code, type HandlerContext, type ServiceImpl } from "@connectrpc/connect";
import * as v1 from "../../gen/grpc/reflection/v1/reflection_pb.js";
import * as v1alpha from "../../gen/grpc/reflection/v1alpha/reflection_pb.js";

/**
 * Index of the descriptors we serve: file name → file, and every fully
 * qualified symbol (message, enum, service, method, extension) → its file.
 */
export class DescriptorIndex {
  private readonly byName = new Map<string, DescFile>();
  private readonly bySymbol = new Map<string, DescFile>();
  private readonly extensions = new Map<string, Map<number, DescFile>>();
  private readonly encoded = new Map<DescFile, Uint8Array>();

  constructor(roots: readonly DescFile[], readonly services: readonly string[]) {
    for (const f of roots) this.addFile(f);
  }

  private addFile(file: DescFile): void {
    if (this.byName.has(file.name + ".proto")) return;
    this.byName.set(file.name + ".proto", file);
    for (const dep of file.dependencies) this.addFile(dep);
    const addMessage = (m: DescMessage) => {
      this.bySymbol.set(m.typeName, file);
      for (const n of m.nestedMessages) addMessage(n);
      for (const e of m.nestedEnums) this.bySymbol.set(e.typeName, file);
      for (const x of m.nestedExtensions) this.addExtension(file, x.typeName, x.extendee.typeName, x.number);
    };
    for (const m of file.messages) addMessage(m);
    for (const e of file.enums) this.bySymbol.set(e.typeName, file);
    for (const s of file.services) {
      this.bySymbol.set(s.typeName, file);
      for (const m of s.methods) this.bySymbol.set(`${s.typeName}.${m.name}`, file);
    }
    for (const x of file.extensions) this.addExtension(file, x.typeName, x.extendee.typeName, x.number);
  }

  private addExtension(file: DescFile, name: string, extendee: string, no: number): void {
    this.bySymbol.set(name, file);
    let m = this.extensions.get(extendee);
    if (!m) this.extensions.set(extendee, (m = new Map()));
    m.set(no, file);
  }

  fileByName(name: string): DescFile | undefined {
    return this.byName.get(name);
  }
  fileBySymbol(symbol: string): DescFile | undefined {
    return this.bySymbol.get(symbol.replace(/^\./, ""));
  }
  fileByExtension(extendee: string, no: number): DescFile | undefined {
    return this.extensions.get(extendee)?.get(no);
  }
  extensionNumbers(extendee: string): number[] | undefined {
    const m = this.extensions.get(extendee);
    if (!m) return this.bySymbol.has(extendee) ? [] : undefined;
    return [...m.keys()].sort((a, b) => a - b);
  }
  encode(file: DescFile): Uint8Array {
    let b = this.encoded.get(file);
    if (!b) this.encoded.set(file, (b = toBinary(FileDescriptorProtoSchema, file.proto)));
    return b;
  }
}

/** Both reflection versions share one message shape; only the package differs. */
type ReflectionModule = typeof v1 | typeof v1alpha;
type Req = v1.ServerReflectionRequest | v1alpha.ServerReflectionRequest;

/**
 * Answers one reflection request. Files come with their transitive
 * dependencies that this stream has not sent yet, as reflection clients
 * (grpcurl) expect, so they can build descriptors without a second round trip.
 */
function answer(index: DescriptorIndex, req: Req, sent: Set<string>) {
  const withDeps = (file: DescFile) => {
    const out: Uint8Array[] = [];
    const visit = (f: DescFile, requested: boolean) => {
      if (!requested && sent.has(f.name)) return;
      sent.add(f.name);
      out.push(index.encode(f));
      for (const d of f.dependencies) visit(d, false);
    };
    visit(file, true);
    return { case: "fileDescriptorResponse" as const, value: { fileDescriptorProto: out } };
  };
  const notFound = (what: string) => ({
    case: "errorResponse" as const,
    value: { errorCode: Code.NotFound, errorMessage: `${what} not found` },
  });
  const r = req.messageRequest;
  switch (r.case) {
    case "listServices":
      return {
        case: "listServicesResponse" as const,
        value: { service: index.services.map((name) => ({ name })) },
      };
    case "fileByFilename": {
      const f = index.fileByName(r.value);
      return f ? withDeps(f) : notFound(`file ${r.value}`);
    }
    case "fileContainingSymbol": {
      const f = index.fileBySymbol(r.value);
      return f ? withDeps(f) : notFound(`symbol ${r.value}`);
    }
    case "fileContainingExtension": {
      const f = index.fileByExtension(r.value.containingType, r.value.extensionNumber);
      return f ? withDeps(f) : notFound(`extension ${r.value.extensionNumber} of ${r.value.containingType}`);
    }
    case "allExtensionNumbersOfType": {
      const nums = index.extensionNumbers(r.value);
      return nums
        ? { case: "allExtensionNumbersResponse" as const, value: { baseTypeName: r.value, extensionNumber: nums } }
        : notFound(`type ${r.value}`);
    }
    default:
      return {
        case: "errorResponse" as const,
        value: { errorCode: Code.InvalidArgument, errorMessage: "empty or unknown reflection request" },
      };
  }
}

/** The index a call may see: each endpoint describes only what it serves. */
export type IndexFor = (ctx: HandlerContext) => DescriptorIndex;

function reflectionService<M extends ReflectionModule>(mod: M, indexFor: IndexFor): ServiceImpl<M["ServerReflection"]> {
  const impl = {
    async *serverReflectionInfo(requests: AsyncIterable<Req>, ctx: HandlerContext) {
      const index = indexFor(ctx);
      const sent = new Set<string>();
      for await (const req of requests) {
        yield { validHost: req.host, originalRequest: req, messageResponse: answer(index, req, sent) };
      }
    },
  };
  return impl as unknown as ServiceImpl<M["ServerReflection"]>;
}

export const reflectionV1 = (indexFor: IndexFor) => reflectionService(v1, indexFor);
export const reflectionV1alpha = (indexFor: IndexFor) => reflectionService(v1alpha, indexFor);
export { v1 as reflectionV1Module, v1alpha as reflectionV1alphaModule };
