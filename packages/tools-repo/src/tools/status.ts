import { z } from "zod";
import { defineTool } from "@toolgate/core";
import { completeRecords } from "../git.js";
import { gitPathArg, repoPathSchema, pathList } from "../paths.js";
import { type RepoRuntime, readIsolation } from "../client.js";

export function statusTool(rt: RepoRuntime) {
  const max = rt.limits.maxListedFiles;
  return defineTool({
    id: "repo.status",
    title: "Repository status",
    description: `Show the current branch and which files are staged, changed or untracked (git status), optionally for some paths only. At most ${max} entries. Entries under the gate's state or denied paths are left out (\`skipped\` counts them). Codes: M modified, A added, D deleted, ? untracked, space unchanged.`,
    input: z.object({ paths: pathList(repoPathSchema, rt.limits.maxPaths).optional() }).strict(),
    output: z.object({
      branch: z.string().nullable(),
      entries: z.array(z.object({ path: z.string(), index: z.string(), worktree: z.string() })),
      truncated: z.boolean(),
      skipped: z.number().int(),
    }),
    actionType: "repo-read",
    effect: "read",
    requiredAllowlist: ["repo:read"],
    risk: "low",
    approval: "never",
    runtimeIsolation: readIsolation,
    untrustedOutput: true,
    target: (input) => (input.paths ? input.paths.join(", ").slice(0, 200) : "."),
    describeResult: (output) => `${output.entries.length} entries`,
    handler: async (input, ctx) => {
      const paths = await Promise.all((input.paths ?? []).map((p) => rt.resolve(p, { allowMissing: true })));
      await rt.git.refuseProgramDrivers(ctx.signal);
      const result = await rt.git.run(
        "status",
        paths.map((p) => gitPathArg(p.relative)),
        { signal: ctx.signal },
      );
      const { records, truncated: cut } = completeRecords(result);
      let branch: string | null = null;
      const entries: { path: string; index: string; worktree: string }[] = [];
      let skipped = 0;
      for (const record of records) {
        if (record.startsWith("## ")) {
          branch = record.slice(3);
          continue;
        }
        if (record.length < 4) continue;
        if (rt.hidden(record.slice(3).replace(/\/$/, ""))) {
          skipped++;
          continue;
        }
        entries.push({ index: record[0]!, worktree: record[1]!, path: record.slice(3) });
      }
      return { branch, entries: entries.slice(0, max), truncated: cut || entries.length > max, skipped };
    },
  });
}
