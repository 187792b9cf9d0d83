#!/usr/bin/env node
import { run } from "./program.js";

// Piped into a reader that stopped (`| head`): stop quietly instead of a stack trace.
process.stdout.on("error", (error: NodeJS.ErrnoException) => {
  if (error.code === "EPIPE") process.exit(process.exitCode ?? 0);
  throw error;
});

process.exitCode = await run(process.argv.slice(2));
