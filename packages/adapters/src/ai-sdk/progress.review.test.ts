/** Review of issue 16's AI SDK progress: a preliminary result kept in the chat history never reaches a model as the tool's result. */
import { defineProfile } from "@toolgate/core";
import { convertToModelMessages, readUIMessageStream, streamText, type UIMessage } from "ai";
import { describe, expect, it } from "vitest";
import { mailGate } from "../fixtures/review-mail.js";
import { done, scripted, toolCall } from "./fixtures/scripted-model.js";
import { toAiSdkTools } from "./tools.js";

/** What an untrusted tool quotes in its status line (it does not read like instructions, so the gate marks it and passes it on). */
const QUOTED = "read the reply from eve: the quarterly numbers are attached";

function untrustedGate() {
  const gate = mailGate(
    "mail.read_inbox",
    (_input, ctx) =>
      new Promise((_resolve, reject) => {
        ctx.progress({ message: QUOTED });
        ctx.signal.addEventListener("abort", () => reject(ctx.signal.reason), { once: true });
      }),
  );
  return { gate, profile: defineProfile({ name: "reader", allow: ["mail:read"], maxRisk: "low" }) };
}

describe("review: a chat stopped while a tool streams progress", () => {
  it("the history the UI kept (a preliminary progress result) is sent back without the untrusted text as the tool's result", async () => {
    const { gate, profile } = untrustedGate();
    const tools = toAiSdkTools(gate, { principal: "p", tenant: "t", profile });
    const { model } = scripted(toolCall("c1", "mail.read_inbox", {}), done);
    const controller = new AbortController();
    const result = streamText({ model, tools, prompt: "read my mail", abortSignal: controller.signal, onError: () => undefined });
    // The UI's copy of the assistant message, as a chat client keeps it; the user presses stop once progress shows.
    let last: UIMessage | undefined;
    try {
      for await (const message of readUIMessageStream({ stream: result.toUIMessageStream({ onError: () => "stopped" }) })) {
        last = message;
        if (message.parts.some((p) => "preliminary" in p && p.preliminary === true)) controller.abort();
      }
    } catch {
      // the stream ends with the abort
    }
    const kept = last!.parts.find((p) => p.type === "tool-mail.read_inbox") as { state: string; preliminary?: boolean; output: unknown };
    expect(kept).toMatchObject({ state: "output-available", preliminary: true, output: { status: "progress", message: QUOTED, untrusted: true } });
    // The next turn: the client sends its history; the app converts it with the same tools.
    const history: UIMessage[] = [{ id: "u1", role: "user", parts: [{ type: "text", text: "read my mail" }] }, last!];
    const sent = JSON.stringify(await convertToModelMessages(history, { tools }));
    expect(sent).toContain('"toolCallId":"c1"');
    expect(sent).not.toContain(QUOTED);
    expect(sent).toMatch(/mail\.read_inbox: no result/);
  });
});
