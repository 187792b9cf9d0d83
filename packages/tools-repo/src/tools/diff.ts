import { join } from "node:path";
import { z } from "zod";
import { defineTool } from "@toolgate/core";
import { cappedText, type GitCommandName } from "../git.js";
import { isProtectedHardLink } from "../deny.js";
import { diffHeaderPath, withoutHiddenFiles } from "../unified-diff.js";
import { gitPathArg, repoPathSchema, pathList } from "../paths.js";
import { type RepoRuntime, readIsolation } from "../client.js";

const SCOPES = { unstaged: "diff_unstaged", staged: "diff_staged", head: "diff_head" } as const satisfies Record<string, GitCommandName>;

export function diffTool(rt: RepoRuntime) {
  const maxBytes = rt.limits.maxDiffBytes;
  return defineTool({
    id: "repo.diff",
    title: "Show changes",
    description: `Show a unified diff of the working tree: \`unstaged\` (working tree against the index, the default), \`staged\` (index against the last commit) or \`head\` (working tree against the last commit), optionally for some paths only. At most ${maxBytes} bytes (\`truncated\` says so). External diff and textconv drivers never run. Changes to the gate's state or denied paths are left out (\`skipped\` counts the files).`,
    input: z
      .object({
        scope: z.enum(["unstaged", "staged", "head"]).default("unstaged"),
        paths: pathList(repoPathSchema, rt.limits.maxPaths).optional(),
      })
      .strict(),
    output: z.object({ diff: z.string(), truncated: z.boolean(), skipped: z.number().int() }),
    actionType: "repo-read",
    effect: "read",
    requiredAllowlist: ["repo:read"],
    risk: "low",
    approval: "never",
    runtimeIsolation: readIsolation,
    untrustedOutput: true,
    target: (input) => `${input.scope}${input.paths ? ` ${input.paths.join(", ").slice(0, 200)}` : ""}`,
    describeResult: (output) => `${Buffer.byteLength(output.diff)} bytes${output.truncated ? " (truncated)" : ""}`,
    handler: async (input, ctx) => {
      const paths = await Promise.all((input.paths ?? []).map((p) => rt.resolve(p, { allowMissing: true })));
      await rt.git.refuseProgramDrivers(ctx.signal);
      const result = await rt.git.run(
        SCOPES[input.scope],
        paths.map((p) => gitPathArg(p.relative)),
        { signal: ctx.signal },
      );
      // A section shows a file's contents by its name; a hard link to the gate's state has an innocent one.
      const linked = new Set<string>();
      for (const [header] of result.stdout.matchAll(/(?<![^\n])diff --git [^\n]*/g)) {
        const file = diffHeaderPath(header);
        if (file !== undefined && (await isProtectedHardLink(join(rt.guard.root, file)))) linked.add(file);
      }
      const { text, skipped } = withoutHiddenFiles(result.stdout, (file) => rt.hidden(file) || linked.has(file));
      const capped = cappedText({ ...result, stdout: text }, maxBytes);
      return { diff: capped.text, truncated: capped.truncated, skipped };
    },
  });
}
