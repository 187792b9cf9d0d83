#!/usr/bin/env node
import { runConformanceCli } from "./cli.js";

process.exitCode = await runConformanceCli(process.argv.slice(2));
