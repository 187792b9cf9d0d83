import { mkdir, mkdtemp, realpath, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { createRootGuard, resolveWithinRoot } from "@toolgate/core/boundary";
import { medianMicros, row } from "./measure.js";

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

    const bare = await medianMicros(() => realpath(absolute));
    const perCall = await medianMicros(async () => {
      if ((await resolveWithinRoot(root, candidate)) !== expected) throw new Error("bench path resolved wrongly");
    });
    const guarded = await medianMicros(async () => {
      if ((await guard.resolve(candidate)) !== expected) throw new Error("bench path resolved wrongly");
    });
    const missing = await medianMicros(() => guard.resolve("l1/l2/l3/l4/l5/new.txt", { allowMissing: true }));
    return [
      "resolveWithinRoot — 6-level path (median of 200 batches × 200 calls)",
      row("fs.realpath alone", bare),
      row("resolveWithinRoot(root, path)", perCall, bare),
      row("createRootGuard(root).resolve(path)", guarded, bare),
      row("guard.resolve, missing leaf (allowMissing)", missing, bare),
    ];
  } finally {
    await rm(base, { recursive: true, force: true });
  }
}
