import { z } from "zod";
import type { RuntimeIsolation } from "@toolgate/core";

/** The family's permission tokens. */
export const REPO_PERMISSIONS = ["repo:read", "repo:write", "repo:check", "repo:commit"] as const;
export type RepoPermission = (typeof REPO_PERMISSIONS)[number];

export const readIsolation: RuntimeIsolation = {
  network: "none",
  filesystem: "read-root",
  secrets: "none",
  subprocess: "verifier",
  notes: "git runs through the family's verifier with hooks, pager, fsmonitor, external diff and textconv drivers off",
};

export const writeIsolation: RuntimeIsolation = {
  network: "none",
  filesystem: "write-root",
  secrets: "none",
  subprocess: "verifier",
  notes: "writes go through resolveWithinRoot; nothing under .git is ever written",
};

/** Largest preview body shown to a human; the preview's details still bind the whole change by hash. */
export const MAX_PREVIEW_BODY_BYTES = 192 * 1024;

export const pathList = (item: z.ZodType<string>, max: number) =>
  z
    .array(item)
    .min(1)
    .max(max)
    .refine((paths) => new Set(paths).size === paths.length, { message: "paths must not repeat" });
