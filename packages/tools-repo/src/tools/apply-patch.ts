import { z } from "zod";
import { defineTool, ToolError, type ApprovalPreview } from "@toolgate/core";
import type { RepoPath } from "../paths.js";
import { type RepoRuntime, writeIsolation } from "../client.js";
import { MAX_PREVIEW_BODY_BYTES } from "../options.js";
import { cutToBytes, sha256 } from "../text.js";
import { applyFilePatch, lineStat, parsePatch, unifiedDiff } from "../unified-diff.js";

interface PlannedFile {
  readonly file: RepoPath;
  readonly before: string | null;
  readonly after: string | null;
}

export function applyPatchTool(rt: RepoRuntime) {
  const { maxWriteBytes, maxPaths } = rt.limits;

  /** Parse, check every path, apply every hunk in memory. Nothing is written here. */
  const plan = async (patch: string, signal: AbortSignal): Promise<PlannedFile[]> => {
    const files = parsePatch(patch);
    if (files.length > maxPaths) throw new ToolError("limit_exceeded", `the patch touches ${files.length} files; the limit is ${maxPaths}`);
    const planned: PlannedFile[] = [];
    for (const filePatch of files) {
      const name = (filePatch.newPath ?? filePatch.oldPath)!;
      if (name.startsWith("-")) throw new ToolError("command_denied", "a path must not start with '-'", { details: { reason: "option_like_path" } });
      const file = await rt.resolve(name, { allowMissing: true });
      if (planned.some((p) => p.file.absolute === file.absolute))
        throw new ToolError("invalid_input", `the patch changes ${JSON.stringify(file.relative)} twice`);
      const before = await rt.readText(file, signal);
      const after = applyFilePatch(filePatch, before);
      if (after !== null && Buffer.byteLength(after) > maxWriteBytes)
        throw new ToolError("limit_exceeded", `${JSON.stringify(file.relative)} would be larger than ${maxWriteBytes} bytes`);
      planned.push({ file, before, after });
    }
    return planned;
  };

  return defineTool({
    id: "repo.apply_patch",
    title: "Apply a patch",
    description: `Apply a unified diff (as \`git diff\` writes it) to files of the repository. Every hunk must match the current content exactly (it may sit at a shifted line); otherwise nothing is written. Creating and deleting files is supported; renames, mode changes, links and binary patches are not. A human approves the resulting diff first. Nothing under .git can be written. At most ${maxPaths} files.`,
    input: z.object({ patch: z.string().min(1).max(maxWriteBytes) }).strict(),
    output: z.object({
      files: z.array(z.object({ path: z.string(), change: z.enum(["create", "modify", "delete"]), added: z.number().int(), removed: z.number().int() })),
    }),
    actionType: "repo-write",
    effect: "write",
    requiredAllowlist: ["repo:write"],
    risk: "medium",
    // No edits: a patch names its files, so an edited patch would make the desk's preview (run as the
    // caller) show the lines of any file the approver names. A single file's text is editable in write_file.
    edits: false,
    approval: "always",
    preview: async (input, ctx): Promise<ApprovalPreview> => {
      const planned = await plan(input.patch, ctx.signal);
      const files = planned.map(({ file, before, after }) => ({
        path: file.relative,
        change: before === null ? "create" : after === null ? "delete" : "modify",
        ...lineStat(before, after),
        sha256Before: before === null ? null : sha256(before),
        sha256After: after === null ? null : sha256(after),
      }));
      const body = cutToBytes(planned.map(({ file, before, after }) => unifiedDiff(file.relative, before, after)).join(""), MAX_PREVIEW_BODY_BYTES);
      return {
        summary: `Apply a patch to ${files.length} file${files.length === 1 ? "" : "s"}: ${files
          .map((f) => f.path)
          .join(", ")
          .slice(0, 200)}`,
        details: { files, diffTruncated: body.truncated },
        body: body.text,
      };
    },
    idempotent: false,
    retryable: false,
    reversible: false,
    runtimeIsolation: { ...writeIsolation, subprocess: "none" },
    provenance: { content: ["/patch"] },
    untrustedOutput: false,
    target: (input) => `patch of ${Buffer.byteLength(input.patch)} bytes`,
    describeResult: (output) => `${output.files.length} files changed`,
    handler: async (input, ctx) => {
      const planned = await plan(input.patch, ctx.signal);
      if (ctx.signal.aborted) throw new ToolError("cancelled", "the patch was cancelled before anything was written");
      const files = [];
      for (const { file, before, after } of planned) {
        if (after === null) await rt.remove(file);
        else await rt.writeText(file, after);
        files.push({
          path: file.relative,
          change: before === null ? ("create" as const) : after === null ? ("delete" as const) : ("modify" as const),
          ...lineStat(before, after),
        });
      }
      return { files };
    },
  });
}
