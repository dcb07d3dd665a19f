// probegate plugin SDK (ABI v1). Plugins import from "../sdk".
export * from "./value";
export * from "./strings";
export * from "./json";
export * from "./jsonwrite";
export * from "./yaml";
export * from "./lnet";
export * from "./abi";
