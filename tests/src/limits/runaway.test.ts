// A runaway agent stops at its budget: an AI SDK agent loop whose model sends mail on every turn
// (200 attempts), with an app that approves every send, through toAiSdkTools, the gmail family and
// the Google emulator, on a SQLite journal file. The budget lets 20 out; every later call is refused
// before a human is asked, and what the model reads says which limit and when the next call fits.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { toAiSdkTools } from "@toolgate/adapters/ai-sdk";
import { startGoogleEmulator } from "@toolgate/emulators";
import { openSqliteJournal } from "@toolgate/store-sqlite";
import { generateText, type ModelMessage } from "ai";
import { MockLanguageModelV3 } from "ai/test";
import { expect, it } from "vitest";
import { expectLimitMessage } from "./fixtures/expect-limit.js";
import { AGENT, DAY_MS, MAIL_SCOPES, mailGate, OWNER, SEND_BUDGET, sendInput } from "./fixtures/mail-gate.js";

const ATTEMPTS = 200;
type Step = Awaited<ReturnType<MockLanguageModelV3["doGenerate"]>>;
type Prompt = Parameters<MockLanguageModelV3["doGenerate"]>[0]["prompt"];
const usage = { inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 }, outputTokens: { total: 1, text: 1, reasoning: 0 } };

/** A model that asks to send one more email every turn, whatever it was told, until it made `ATTEMPTS` calls. */
function runawayModel() {
  const prompts: Prompt[] = [];
  let calls = 0;
  const model = new MockLanguageModelV3({
    doGenerate: async ({ prompt }): Promise<Step> => {
      prompts.push(prompt);
      if (calls >= ATTEMPTS) return { content: [{ type: "text", text: "done" }], finishReason: { unified: "stop", raw: "stop" }, usage, warnings: [] };
      const n = calls++;
      const input = JSON.stringify(sendInput("runaway", n));
      return {
        content: [{ type: "tool-call", toolCallId: `c${n}`, toolName: "gmail.send_message", input }],
        finishReason: { unified: "tool-calls", raw: "tool_calls" },
        usage,
        warnings: [],
      };
    },
  });
  return { model, prompts, calls: () => calls };
}

it("a runaway AI SDK agent loop stops at its budget: 20 sent of 200 attempts, the rest refused with the limit and the wait, in words the model reads", async () => {
  const emulator = await startGoogleEmulator({ gmail: { address: OWNER } });
  const journal = await openSqliteJournal(join(mkdtempSync(join(tmpdir(), "toolgate-runaway-")), "journal.db"), { auditKey: "runaway-key" });
  try {
    const gate = await mailGate(journal, {
      rootUrl: emulator.url,
      tokenUrl: emulator.tokenUrl,
      ...emulator.client,
      code: emulator.authorize({ scopes: MAIL_SCOPES }).code,
    });
    const { operator } = await gate.authority.operators.add("desk", { role: "approver" }, gate.authority.owner());
    let asked = 0;
    // The app approves every send it is shown: only the budget stands between the loop and the outbox.
    const tools = toAiSdkTools(gate, AGENT, { approver: await gate.authority.actingAs(operator.id), onApprovalRequest: () => asked++ });
    const { model, prompts, calls } = runawayModel();

    const messages: ModelMessage[] = [{ role: "user", content: "Keep everyone posted." }];
    const appErrors: unknown[] = [];
    for (let turn = 0; turn < 3 * ATTEMPTS; turn++) {
      const result = await generateText({ model, tools, messages });
      messages.push(...result.response.messages);
      for (const part of result.content) if (part.type === "tool-error") appErrors.push(part.error);
      const requests = result.content.filter((p) => p.type === "tool-approval-request");
      if (requests.length > 0)
        messages.push({ role: "tool", content: requests.map((r) => ({ type: "tool-approval-response" as const, approvalId: r.approvalId, approved: true })) });
      else if (result.finishReason === "stop") break;
    }

    expect(calls()).toBe(ATTEMPTS);
    expect(emulator.gmail.sent).toHaveLength(SEND_BUDGET);
    // Over the budget nobody was asked: 20 approvals for 20 sends.
    expect(asked).toBe(SEND_BUDGET);

    // What the model read back for each call: 20 sends, then 180 refusals naming the limit and the wait.
    const results = prompts
      .at(-1)!
      .flatMap((m) => (m.role === "tool" ? m.content : []))
      .filter((p) => p.type === "tool-result");
    expect(results).toHaveLength(ATTEMPTS);
    const refusals = results.filter((p) => p.output.type === "error-text");
    expect(refusals).toHaveLength(ATTEMPTS - SEND_BUDGET);
    expect(results.slice(0, SEND_BUDGET).every((p) => p.output.type === "text")).toBe(true);
    // The app gets the typed refusal, with the wait in milliseconds; the model's text names the same wait.
    expect(appErrors).toHaveLength(ATTEMPTS - SEND_BUDGET);
    for (const [i, error] of appErrors.entries()) {
      const result = (error as { result: { status: string; code: string; retryAfterMs?: number } }).result;
      expect(result).toMatchObject({ status: "denied", code: "rate_limited" });
      expect(result.retryAfterMs).toBeGreaterThan(0);
      expect(result.retryAfterMs).toBeLessThanOrEqual(DAY_MS + Math.ceil(DAY_MS / 60));
      const text = (refusals[i]!.output as { value: string }).value;
      expect(text.startsWith("rate_limited: ")).toBe(true);
      expectLimitMessage(text.slice("rate_limited: ".length), result.retryAfterMs);
    }
    const audit = await journal.readAudit();
    expect(audit.filter((e) => e.type === "limit.charged")).toHaveLength(SEND_BUDGET);
    expect(audit.filter((e) => e.type === "call.refused")).toHaveLength(ATTEMPTS - SEND_BUDGET);
  } finally {
    await journal.close();
    await emulator.close();
  }
}, 120_000);
