// The sources folder's entry point: what the rest of the gateway (and the
// bench) may use of it. The catalog is the only way plugins see the node; the
// rest are the helpers the CLI and the offline tools share with it.

export * from "./catalog.js";
export { demoBinDir, demoScenarioDir, listDemoScenarios } from "./demo.js";
export { resolveProgram } from "../../exec/path-lookup.js";
export { FAULT_KINDS } from "./replay.js";
export { parseDuration, parseSize } from "./units.js";
