export { defineConfig, loadConfig, findConfig, CONFIG_NAMES } from "./config.js";
export type { ToolgateConfig, Composition, ComposeContext } from "./config.js";
export { run } from "./program.js";
export type { CommandPlugin, WithRuntime } from "./program.js";
export { openRuntime } from "./runtime.js";
export type { Runtime, OpenRuntimeOptions } from "./runtime.js";
export { EXIT, CliFailure } from "./output.js";
export type { Io } from "./output.js";
