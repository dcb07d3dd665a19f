import { fromBinary, hasOption, toJson, type DescMessage, type JsonObject, type JsonValue } from "@bufbuild/protobuf";
import { csi_secret } from "../../gen/csi/v1/csi_pb.js";

export const REDACTED = "[REDACTED]";

function isObject(v: JsonValue | undefined): v is JsonObject {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/**
 * Walks a message's JSON form alongside its descriptor and replaces every
 * field marked `csi_secret` (keys and values of secret maps alike) with a
 * marker, at any depth, including messages inside lists and map values.
 * Descriptor-driven, so a secret field added to the proto is covered
 * without code changes.
 */
function redactInPlace(desc: DescMessage, json: JsonObject): void {
  for (const field of desc.fields) {
    const key = field.jsonName;
    if (!Object.hasOwn(json, key)) continue;
    if (hasOption(field, csi_secret)) {
      json[key] = REDACTED;
      continue;
    }
    const value = json[key];
    if (field.fieldKind === "message" && isObject(value)) {
      redactInPlace(field.message, value);
    } else if (field.fieldKind === "list" && field.listKind === "message" && Array.isArray(value)) {
      for (const item of value) if (isObject(item)) redactInPlace(field.message, item);
    } else if (field.fieldKind === "map" && field.mapKind === "message" && isObject(value)) {
      for (const item of Object.values(value)) if (isObject(item)) redactInPlace(field.message, item);
    }
  }
}

/** A message's JSON form with every secret replaced; safe to log at any level. */
export function redactedJson(desc: DescMessage, bytes: Uint8Array): JsonValue {
  let json: JsonValue;
  try {
    json = toJson(desc, fromBinary(desc, bytes, { readUnknownFields: false }), { alwaysEmitImplicit: false });
  } catch (err) {
    // Never fall back to the raw bytes: they may hold a secret.
    return { undecodable: `${bytes.length} bytes: ${(err as Error).message}` };
  }
  if (isObject(json)) redactInPlace(desc, json);
  return json;
}
