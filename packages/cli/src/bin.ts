#!/usr/bin/env node
import { run } from "./program.js";
import { plugins } from "./plugins.js";

process.exitCode = await run(process.argv.slice(2), { plugins: await plugins() });
