import { expectTypeOf, test } from "vitest";
import { createGate, createMemoryJournal, createToolRegistry, type CallOptions } from "@toolgate/core";
import { createRepoTools, type RepoPermission } from "./index.js";

declare const call: CallOptions;

test("the family's ids, inputs and tokens are typed", () => {
  const family = createRepoTools({ root: "/repo", checks: { test: { argv: ["npm", "test"] } } });
  const gate = createGate({ registry: createToolRegistry({ families: [family] }), journal: createMemoryJournal() });
  expectTypeOf(family.name).toEqualTypeOf<"repo">();
  expectTypeOf<RepoPermission>().toEqualTypeOf<"repo:read" | "repo:write" | "repo:check" | "repo:commit">();
  void gate.invoke("repo.read_file", { path: "README.md", startLine: 1 }, call);
  void gate.invoke("repo.commit", { message: "m", paths: ["a.ts"] }, call);
  // @ts-expect-error a path is a string
  void gate.invoke("repo.read_file", { path: 1 }, call);
  // @ts-expect-error a commit names its paths
  void gate.invoke("repo.commit", { message: "m" }, call);
});
