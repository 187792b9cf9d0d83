import { z } from "zod";
import { defineTool, ToolError, type ApprovalPreview } from "@toolgate/core";
import { completeRecords } from "../git.js";
import { gitPathArg, repoPathSchema, type RepoPath, pathList } from "../paths.js";
import { type RepoRuntime, writeIsolation } from "../client.js";
import { sha256 } from "../text.js";

interface PathChange {
  readonly path: string;
  readonly change: "add" | "modify" | "delete" | "unchanged";
  /** Null for binary files. */
  readonly added: number | null;
  readonly removed: number | null;
  /** The working tree's content as approved; null when the file is deleted. */
  readonly sha256: string | null;
}

const MAX_MESSAGE = 4000;

export function commitTool(rt: RepoRuntime) {
  const { maxPaths } = rt.limits;

  /** What committing these paths would record now: per path, the change against the last commit. */
  const plan = async (input: { message: string; paths: readonly string[] }, signal: AbortSignal): Promise<{ files: RepoPath[]; changes: PathChange[] }> => {
    const files = await Promise.all(input.paths.map((p) => rt.resolve(p, { allowMissing: true })));
    if (files.some((f) => f.relative === ".")) throw new ToolError("invalid_input", "name the files to commit; the whole tree is not a path");
    if (new Set(files.map((f) => f.relative)).size !== files.length) throw new ToolError("invalid_input", "two paths name the same file");
    await rt.git.refuseProgramDrivers(signal);
    const args = files.map((f) => gitPathArg(f.relative));
    const head = await rt.git.run("head", [], { signal, ok: [0, 1] });
    const numstat = new Map<string, { added: number | null; removed: number | null }>();
    if (head.exitCode === 0) {
      const { records } = completeRecords(await rt.git.run("numstat_head", args, { signal }));
      for (const record of records) {
        const [added, removed, ...rest] = record.split("\t");
        const path = rest.join("\t");
        if (added === undefined || removed === undefined || path === "") continue;
        numstat.set(path, { added: added === "-" ? null : Number(added), removed: removed === "-" ? null : Number(removed) });
      }
    }
    const untracked = new Set(completeRecords(await rt.git.run("ls_untracked", args, { signal })).records);
    const changes: PathChange[] = [];
    for (const file of files) {
      let content: string | null;
      let binary = false;
      try {
        content = await rt.readText(file, signal);
      } catch (cause) {
        if (!ToolError.is(cause, "invalid_input") || cause.details?.["reason"] !== "binary") throw cause;
        content = "";
        binary = true;
      }
      const digest = content === null ? null : binary ? "binary" : sha256(content);
      const stat = numstat.get(file.relative);
      const counted = content === null || binary ? null : content === "" ? 0 : content.split("\n").length - (content.endsWith("\n") ? 1 : 0);
      if (stat) changes.push({ path: file.relative, change: content === null ? "delete" : "modify", ...stat, sha256: digest });
      else if (untracked.has(file.relative) || (head.exitCode !== 0 && content !== null))
        changes.push({ path: file.relative, change: "add", added: counted, removed: 0, sha256: digest });
      else changes.push({ path: file.relative, change: "unchanged", added: 0, removed: 0, sha256: digest });
    }
    if (changes.every((c) => c.change === "unchanged")) throw new ToolError("conflict", "nothing to commit: none of the listed paths changed");
    return { files, changes };
  };

  return defineTool({
    id: "repo.commit",
    title: "Commit changes",
    description: `Record a commit of exactly the listed paths (at most ${maxPaths}) as they are in the working tree, with the given message. Other staged or changed files are left out. Hooks never run. A human approves the message, paths and diff stat first.`,
    input: z
      .object({
        message: z
          .string()
          .min(1)
          .max(MAX_MESSAGE)
          .refine((m) => !m.includes("\0"), { message: "a message must not contain NUL bytes" })
          .refine((m) => m.trim().length > 0, { message: "a message must not be blank" }),
        paths: pathList(repoPathSchema, maxPaths),
      })
      .strict(),
    output: z.object({ commit: z.string(), paths: z.array(z.string()), subject: z.string() }),
    actionType: "repo-write",
    effect: "write",
    requiredAllowlist: ["repo:commit"],
    risk: "medium",
    // What an approver may change before it runs (ids stay out: a desk preview reads them as the caller).
    edits: { fields: ["/message"] },
    approval: "always",
    preview: async (input, ctx): Promise<ApprovalPreview> => {
      const { changes } = await plan(input, ctx.signal);
      const width = Math.max(...changes.map((c) => c.path.length));
      const stat = changes
        .map(
          (c) =>
            `${c.path.padEnd(width)} | ${c.change === "unchanged" ? "unchanged" : c.added === null ? "binary" : `+${c.added} -${c.removed ?? 0}`}${c.change === "add" ? " (new)" : c.change === "delete" ? " (deleted)" : ""}`,
        )
        .join("\n");
      return {
        summary: `Commit ${changes.length} path${changes.length === 1 ? "" : "s"}: ${JSON.stringify(subjectOf(input.message))}`,
        details: { message: input.message, paths: changes.map((c) => c.path), stat: changes },
        body: `${input.message}\n\n${stat}\n`,
      };
    },
    idempotent: false,
    retryable: false,
    reversible: true,
    runtimeIsolation: writeIsolation,
    provenance: { destinations: ["/paths"], content: ["/message"] },
    untrustedOutput: false,
    target: (input) => input.paths.join(", ").slice(0, 200),
    describeResult: (output) => `commit ${output.commit.slice(0, 12)} (${output.paths.length} paths)`,
    handler: async (input, ctx) => {
      const { files } = await plan(input, ctx.signal);
      const args = files.map((f) => gitPathArg(f.relative));
      if (ctx.signal.aborted) throw new ToolError("cancelled", "the commit was cancelled before anything was staged");
      await rt.git.run("add", args, { signal: ctx.signal });
      // `--only -- paths`: exactly these paths, as they are now; nothing else staged goes in.
      await rt.git.run("commit", [input.message, "--", ...args], { signal: ctx.signal });
      const head = await rt.git.run("head", [], { signal: ctx.signal });
      return { commit: head.stdout.trim(), paths: files.map((f) => f.relative), subject: subjectOf(input.message) };
    },
  });
}

function subjectOf(message: string): string {
  const line = message.trim().split("\n")[0] ?? "";
  return line.length > 120 ? `${line.slice(0, 120)}…` : line;
}
