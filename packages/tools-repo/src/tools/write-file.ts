import { z } from "zod";
import { defineTool, ToolError, type ApprovalPreview } from "@toolgate/core";
import { repoPathSchema } from "../paths.js";
import { type RepoRuntime, writeIsolation } from "../client.js";
import { MAX_PREVIEW_BODY_BYTES } from "../options.js";
import { cutToBytes, sha256 } from "../text.js";
import { lineStat, unifiedDiff } from "../unified-diff.js";

export function writeFileTool(rt: RepoRuntime) {
  const maxBytes = rt.limits.maxWriteBytes;

  /** The change as it stands now: what the human approves and what the handler then writes. */
  const plan = async (input: { path: string; content: string }, signal: AbortSignal) => {
    const bytes = Buffer.byteLength(input.content, "utf8");
    if (bytes > maxBytes) throw new ToolError("limit_exceeded", `content is ${bytes} bytes; the limit is ${maxBytes}`, { details: { bytes, limit: maxBytes } });
    const file = await rt.resolve(input.path, { allowMissing: true });
    const before = await rt.readText(file, signal);
    return { file, before, bytes };
  };

  return defineTool({
    id: "repo.write_file",
    title: "Write a repository file",
    description: `Create a text file or replace its whole content (at most ${maxBytes} bytes). A human approves the exact diff first. Overwritten content that was never committed cannot be recovered. Nothing under .git can be written.`,
    input: z.object({ path: repoPathSchema, content: z.string().max(maxBytes) }).strict(),
    output: z.object({ path: z.string(), bytes: z.number().int(), sha256: z.string(), created: z.boolean() }),
    actionType: "repo-write",
    effect: "write",
    requiredAllowlist: ["repo:write"],
    risk: "medium",
    // What an approver may change before it runs (ids stay out: a desk preview reads them as the caller).
    edits: { fields: ["/content"] },
    approval: "always",
    preview: async (input, ctx): Promise<ApprovalPreview> => {
      const { file, before, bytes } = await plan(input, ctx.signal);
      const diff = unifiedDiff(file.relative, before, input.content);
      const { added, removed } = lineStat(before, input.content);
      const change = before === null ? "create" : before === input.content ? "unchanged" : "modify";
      const body = cutToBytes(diff, MAX_PREVIEW_BODY_BYTES);
      return {
        summary: `${change === "create" ? "Create" : change === "modify" ? "Change" : "Rewrite (unchanged)"} ${file.relative} (+${added} -${removed} lines)`,
        details: {
          path: file.relative,
          change,
          bytes,
          added,
          removed,
          sha256Before: before === null ? null : sha256(before),
          sha256After: sha256(input.content),
          diffTruncated: body.truncated,
        },
        body: body.text,
      };
    },
    idempotent: true,
    retryable: true,
    reversible: false,
    runtimeIsolation: { ...writeIsolation, subprocess: "none" },
    provenance: { destinations: ["/path"], content: ["/content"] },
    untrustedOutput: false,
    target: (input) => input.path,
    describeResult: (output) => `${output.path}: ${output.bytes} bytes${output.created ? " (new)" : ""}`,
    handler: async (input, ctx) => {
      const { file, before, bytes } = await plan(input, ctx.signal);
      if (ctx.signal.aborted) throw new ToolError("cancelled", "the write was cancelled before it started");
      await rt.writeText(file, input.content);
      return { path: file.relative, bytes, sha256: sha256(input.content), created: before === null };
    },
  });
}
