#!/usr/bin/env node
import { run } from "./program.js";

// Piped into a reader that stopped (`| head`): stop quietly instead of a stack trace.
process.stdout.on("error", (error: NodeJS.ErrnoException) => {
  if (error.code === "EPIPE") process.exit(process.exitCode ?? 0);
  throw error;
});
// Errors piped into a reader that stopped (`2>&1 | head`): the messages are lost, the exit code is kept.
process.stderr.on("error", (error: NodeJS.ErrnoException) => {
  if (error.code !== "EPIPE" && error.code !== "ERR_STREAM_DESTROYED") throw error;
});

process.exitCode = await run(process.argv.slice(2));
// A failed command is over: something a composition file started and never stopped (a child process,
// a timer) must not keep it running. Its output is written; the grace lets open handles close first.
if (process.exitCode !== 0) setTimeout(() => process.exit(), 2_000).unref();
