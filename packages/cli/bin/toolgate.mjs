#!/usr/bin/env node
// The `toolgate` command. This entry is committed, so npm links it at install time, before the
// TypeScript build exists; it runs the built CLI, or says how to build it.
import { existsSync } from "node:fs";

const entry = new URL("../dist/bin.js", import.meta.url);
if (!existsSync(entry)) {
  console.error("toolgate: the CLI is not built yet. In the repository: npm run build (npm run demo and npm test build it too).");
  process.exit(3);
}
await import(entry.href);
