// probegate plugin SDK (ABI v1). In-tree plugins import from "../sdk";
// standalone projects from "@probegate/plugin-sdk" (package.json, README.md).
export * from "./value";
export * from "./strings";
export * from "./json";
export * from "./jsonwrite";
export * from "./yaml";
export * from "./lnet";
export * from "./abi";
export * from "./phase";
export * from "./log";
export * from "./lustre";
export * from "./mounts";
export * from "./report";
