import { mkdir, mkdtemp, realpath, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { createRootGuard, resolveWithinRoot } from "@toolgate/core/boundary";
import { compareTimes, row } from "./measure.js";
import { target, type TargetSpec } from "./targets.js";

export const pathTargets = {
  resolve: { label: "resolveWithinRoot, 6-level path", unit: "µs", direction: "at-most", target: 20 },
} as const satisfies Record<string, TargetSpec>;

/** Path containment on a 6-level path: the cost every filesystem tool pays per name it is given. */
export async function benchResolveWithinRoot(): Promise<string[]> {
  const base = await mkdtemp(path.join(tmpdir(), "toolgate-bench-rwr-"));
  try {
    const root = path.join(base, "repo");
    const candidate = "l1/l2/l3/l4/l5/file.txt";
    await mkdir(path.join(root, "l1/l2/l3/l4/l5"), { recursive: true });
    await writeFile(path.join(root, candidate), "bench");
    const absolute = path.join(root, candidate);
    const guard = createRootGuard(root);
    const expected = path.join(guard.root, candidate);

    const { wall, cpu } = await compareTimes(
      {
        bare: () => realpath(absolute),
        perCall: async () => {
          if ((await resolveWithinRoot(root, candidate)) !== expected) throw new Error("bench path resolved wrongly");
        },
        guarded: async () => {
          if ((await guard.resolve(candidate)) !== expected) throw new Error("bench path resolved wrongly");
        },
        missing: () => guard.resolve("l1/l2/l3/l4/l5/new.txt", { allowMissing: true }),
      },
      { rounds: 150, batchSize: 100, warmup: 1000 },
    );
    const { bare, perCall, guarded, missing } = wall as Record<"bare" | "perCall" | "guarded" | "missing", number>;
    return [
      "resolveWithinRoot — 6-level path (median of 150 interleaved rounds × 100 calls)",
      row("fs.realpath alone", bare, undefined, cpu["bare"]),
      row("resolveWithinRoot(root, path)", perCall, bare, cpu["perCall"]),
      row("createRootGuard(root).resolve(path)", guarded, bare, cpu["guarded"]),
      row("guard.resolve, missing leaf (allowMissing)", missing, bare, cpu["missing"]),
      target({ ...pathTargets.resolve, value: perCall }),
    ];
  } finally {
    await rm(base, { recursive: true, force: true });
  }
}
