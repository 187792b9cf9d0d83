import { generateText, type InferToolOutput, type ToolSet } from "ai";
import type { OkResult } from "@toolgate/core";
import { describe, expectTypeOf, it } from "vitest";
import { createNotesGate, profiles } from "../fixtures/notes-family.js";
import type { GateProgress } from "../shared/progress.js";
import { toAiSdkTools } from "./tools.js";

const { gate } = createNotesGate();
const tools = toAiSdkTools(gate, { principal: "p", tenant: "t", profile: profiles.writer });

describe("toAiSdkTools types", () => {
  it("keys are the registry's tool ids", () => {
    expectTypeOf<keyof typeof tools>().toEqualTypeOf<
      "notes.add_note" | "notes.read_note" | "notes.delete_note" | "notes.word_count" | "notes.sync_notes" | "notes.stats" | "notes.admin_reset"
    >();
  });

  it("each tool's input and output stay typed", () => {
    const add = tools["notes.add_note"]!;
    type Execute = NonNullable<typeof add.execute>;
    expectTypeOf<Parameters<Execute>[0]>().toEqualTypeOf<{ id: string; text: string }>();
    // The final result is the gate's typed ok result; progress comes before it as preliminary results.
    type Output = InferToolOutput<typeof add>;
    expectTypeOf<Extract<Output, { status: "ok" }>>().toEqualTypeOf<OkResult<{ id: string; bytes: number }>>();
    expectTypeOf<Exclude<Output, { status: "ok" }>>().toEqualTypeOf<GateProgress>();
    const sync = tools["notes.sync_notes"]!;
    // zod defaults stay optional for the caller
    expectTypeOf<Parameters<NonNullable<typeof sync.execute>>[0]>().toEqualTypeOf<{ steps: number; waitForAbort?: boolean | undefined }>();
  });

  it("the record is a ToolSet generateText accepts", () => {
    expectTypeOf(tools).toExtend<ToolSet>();
    void (() => generateText({ model: undefined as never, tools, prompt: "x" }));
  });

  it("the approver is the authority's Approver, never a typed name", () => {
    // @ts-expect-error a string is no approver
    void toAiSdkTools(gate, { principal: "p", tenant: "t", profile: profiles.writer }, { approver: "alice" });
    void (async () => toAiSdkTools(gate, { principal: "p", tenant: "t", profile: profiles.writer }, { approver: await gate.authority.actingAs("alice") }));
  });
});
