import { describe, expectTypeOf, it } from "vitest";
import type { z } from "zod";
import type { ApprovalPreview } from "../manifest.js";
import type { ApprovalRequestSchema, OutboxEntrySchema, RecordedResultSchema } from "./records.js";
import type { ApprovalRequest, OutboxEntry, RecordedResult } from "./types.js";

// A field the schemas did not list would be dropped from every stored record without a word.
describe("stored-record schemas", () => {
  it("list every field of the records they decode", () => {
    expectTypeOf<keyof z.output<typeof OutboxEntrySchema>>().toEqualTypeOf<keyof OutboxEntry>();
    // `outputPruned` is not stored: a read sets it when the envelope holds no body.
    expectTypeOf<keyof z.output<typeof RecordedResultSchema>>().toEqualTypeOf<Exclude<keyof RecordedResult, "outputPruned">>();
    expectTypeOf<keyof z.output<typeof ApprovalRequestSchema>>().toEqualTypeOf<keyof ApprovalRequest>();
    expectTypeOf<keyof z.output<typeof ApprovalRequestSchema>["preview"]>().toEqualTypeOf<keyof ApprovalPreview>();
  });
});
