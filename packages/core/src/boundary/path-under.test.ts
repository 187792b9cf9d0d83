import { describe, expect, it } from "vitest";
import { pathIsUnder } from "./path-under.js";

describe("pathIsUnder", () => {
  it("is the directory itself or inside it by whole segments", () => {
    expect(pathIsUnder("/a/b", "/a/b")).toBe(true);
    expect(pathIsUnder("/a/b/c", "/a/b")).toBe(true);
    expect(pathIsUnder("/a/b/c", "/a/b/")).toBe(true);
    expect(pathIsUnder("/x", "/")).toBe(true);
  });

  it("is not a sibling that shares a prefix, a parent or another tree", () => {
    expect(pathIsUnder("/a/bc", "/a/b")).toBe(false);
    expect(pathIsUnder("/a/b-c/d", "/a/b")).toBe(false);
    expect(pathIsUnder("/a", "/a/b")).toBe(false);
    expect(pathIsUnder("/b/a", "/a")).toBe(false);
  });
});
