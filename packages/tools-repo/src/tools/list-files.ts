import { z } from "zod";
import { defineTool } from "@toolgate/core";
import { completeRecords } from "../git.js";
import { repoPathSchema } from "../paths.js";
import { type RepoRuntime, readIsolation } from "../client.js";
import { globToRegExp } from "../text.js";

export function listFilesTool(rt: RepoRuntime) {
  const max = rt.limits.maxListedFiles;
  return defineTool({
    id: "repo.list_files",
    title: "List repository files",
    description: `List files in the repository (tracked, plus untracked ones that are not ignored), optionally under a directory and matching a glob (\`**\`, \`*\`, \`?\`, \`{a,b}\`; a glob without \`/\` matches file names anywhere). Never lists .git, the gate's state or denied paths (\`skipped\` counts those left out). At most ${max} paths.`,
    input: z
      .object({
        glob: z.string().min(1).max(500).optional().meta({ description: "e.g. `src/**/*.ts` or `*.md`" }),
        directory: repoPathSchema.optional(),
        limit: z.number().int().min(1).max(max).optional(),
      })
      .strict(),
    output: z.object({ files: z.array(z.string()), total: z.number().int(), truncated: z.boolean(), skipped: z.number().int() }),
    actionType: "repo-read",
    effect: "read",
    requiredAllowlist: ["repo:read"],
    risk: "low",
    approval: "never",
    runtimeIsolation: readIsolation,
    untrustedOutput: true,
    target: (input) => `${input.directory ?? "."}${input.glob ? ` ${input.glob}` : ""}`,
    describeResult: (output) => `${output.files.length} of ${output.total} files`,
    handler: async (input, ctx) => {
      const limit = input.limit ?? max;
      const directory = input.directory === undefined ? undefined : await rt.resolve(input.directory);
      const result = await rt.git.run("ls_files", [], { signal: ctx.signal, ...(directory ? { cwd: directory.relative } : {}) });
      const { records, truncated: cut } = completeRecords(result);
      const glob = input.glob === undefined ? undefined : globToRegExp(input.glob);
      // Counted before the glob, so the count says nothing about which names a glob probes.
      const visible = records.filter((file) => !rt.hidden(file));
      const matching = visible.filter((file) => !glob || glob.regex.test(glob.basename ? (file.split("/").at(-1) ?? file) : file));
      return { files: matching.slice(0, limit), total: matching.length, truncated: cut || matching.length > limit, skipped: records.length - visible.length };
    },
  });
}
