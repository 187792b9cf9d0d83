import type { TracerProvider } from "@opentelemetry/api";
import { describe, expectTypeOf, it } from "vitest";
import { createNotesGate, profiles } from "../fixtures/notes-family.js";
import type { GateProgress } from "../shared/progress.js";
import { agentsTracerProvider } from "./otel-bridge.js";
import { toOpenAITools, type OpenAIName, type OpenAIToolProgress } from "./tools.js";
import type { GateCallReport } from "./trace.js";

const { gate } = createNotesGate();
const openai = toOpenAITools(gate, { principal: "p", tenant: "t", profile: profiles.writer });

describe("toOpenAITools types", () => {
  it("maps ids to function names at the type level", () => {
    expectTypeOf<OpenAIName<"gmail.send_message">>().toEqualTypeOf<"gmail__send_message">();
    expectTypeOf(openai.nameOf("notes.add_note")).toEqualTypeOf<"notes__add_note">();
    // @ts-expect-error not a tool id of this registry
    openai.nameOf("notes.nope");
  });

  it("invoke keeps inputs typed per mapped name", () => {
    void openai.invoke("notes__add_note", { id: "a", text: "b" });
    // @ts-expect-error wrong input type for a known name
    void openai.invoke("notes__add_note", { id: 1, text: "b" });
    // @ts-expect-error an input meant for another tool
    void openai.invoke("notes__word_count", { id: "a" });
    // a name from a model is a string and its arguments unknown
    const fromModel: { name: string; arguments: string } = { name: "x", arguments: "{}" };
    void openai.invoke(fromModel.name, fromModel.arguments);
  });

  it("the approver is the authority's Approver, never a typed name", () => {
    // @ts-expect-error a string is no approver
    void toOpenAITools(gate, { principal: "p", tenant: "t", profile: profiles.writer }, { approver: "bob" });
  });

  it("progress: a gate progress event with the SDK's call id; the run item's report; a tracer provider for the gate", () => {
    expectTypeOf<OpenAIToolProgress>().toExtend<GateProgress & { callId: string }>();
    void toOpenAITools(gate, { principal: "p", tenant: "t", profile: profiles.writer }, { onProgress: (event) => expectTypeOf(event.callId).toBeString() });
    expectTypeOf<GateCallReport["progress"]>().toEqualTypeOf<readonly GateProgress[]>();
    expectTypeOf(agentsTracerProvider()).toEqualTypeOf<TracerProvider>();
  });
});
