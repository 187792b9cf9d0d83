import { readFile } from "node:fs/promises";
import { resolve } from "node:path";
import { type InvokeResult } from "@toolgate/core";
import { CliFailure, EXIT, hintFor, type Io } from "../output.js";
import { printable } from "../printable.js";
import type { Runtime } from "../runtime.js";
import { renderRequest } from "./approvals.js";

export interface CallOptions {
  readonly input: string;
  readonly profile: string;
  readonly principal?: string;
  readonly tenant?: string;
  readonly key?: string;
  readonly json: boolean;
}

/**
 * One governed call. After a human approved it (`toolgate approvals approve`, the console), the
 * same call again runs: the gate finds the granted request by its binding (tool, input, principal,
 * tenant, preview) in the journal and consumes it with the call, once.
 */
export async function callCommand(runtime: Runtime, toolId: string, options: CallOptions, io: Io): Promise<number> {
  const input = await readInput(runtime, options.input);
  const call = {
    principal: options.principal ?? runtime.config.principal ?? "cli",
    tenant: options.tenant ?? runtime.config.tenant ?? "default",
    profile: runtime.profile(options.profile),
    ...(options.key ? { idempotencyKey: options.key } : {}),
    onProgress: (event: { message: string }) => {
      if (io.interactive) io.err(`… ${event.message}`);
    },
  };
  const result: InvokeResult = await runtime.gate.invoke(toolId, input, call);
  if (options.json) io.out(JSON.stringify(result, null, 2));
  else io.out(printable(describeResult(runtime, result)));
  switch (result.status) {
    case "ok":
      return EXIT.ok;
    case "approval_required":
      return EXIT.approval;
    default:
      return EXIT.failed;
  }
}

function describeResult(runtime: Runtime, result: InvokeResult): string {
  switch (result.status) {
    case "ok":
      return [`ok${result.replayed ? " (replayed: the call already ran with this key)" : ""}`, result.content].join("\n");
    case "approval_required":
      return [
        `approval required (${result.reason === "output" ? "flagged output held" : "a human must approve this call"})`,
        `request ${result.requestId}, expires ${result.expiresAt}`,
        `preview: ${result.preview.summary}`,
        ...(result.preview.body !== undefined ? result.preview.body.split("\n").map((l) => `  | ${l}`) : []),
        `approve: toolgate approvals approve ${result.requestId} (or an operator, in toolgate console), then run this call again`,
      ].join("\n");
    case "denied":
    case "error": {
      // A kill switch names its target (the tool, or its whole family): that is what turns it back on.
      const target = typeof result.details?.["target"] === "string" ? result.details["target"] : `tool:${result.toolId}`;
      const hint = hintFor(result.code, result.code === "tool_disabled" ? target : result.toolId);
      return [
        `${result.status}: ${result.code} — ${result.message}`,
        `(effect: ${result.boundary.replace(/_/g, " ")}; journal #${result.receipt?.seq ?? "?"}; ${runtime.journal.kind})`,
        ...(hint ? [`hint: ${hint}`] : []),
      ].join("\n");
    }
  }
}

async function readInput(runtime: Runtime, text: string): Promise<unknown> {
  const source = text.startsWith("@") ? await readFile(resolve(process.cwd(), text.slice(1)), "utf8") : text;
  try {
    return JSON.parse(source) as unknown;
  } catch {
    throw new CliFailure("--input is not valid JSON", EXIT.usage, `pass JSON or @file, e.g. --input '{"path":"README.md"}' (${runtime.configPath})`);
  }
}

export { renderRequest };
