import { describe, expectTypeOf, it } from "vitest";
import { pipeline, type Connected } from "./pipeline.js";
import { resolve } from "./steps/resolve.js";
import { freeze } from "./steps/freeze.js";
import { settle } from "./steps/settle.js";
import { run } from "./steps/run.js";

describe("pipeline() checks that steps connect", () => {
  it("accepts steps whose stages follow each other", () => {
    expectTypeOf<Connected<[typeof resolve, typeof freeze]>>().toEqualTypeOf<true>();
  });

  it("rejects a step that needs a stage the one before it has not reached", () => {
    expectTypeOf<Connected<[typeof resolve, typeof settle]>>().not.toEqualTypeOf<true>();
    // @ts-expect-error -- settle needs a fenced output; resolve only resolves the tool
    pipeline([resolve, settle]);
    // @ts-expect-error -- run needs an intent and a key
    pipeline([freeze, run]);
  });
});
