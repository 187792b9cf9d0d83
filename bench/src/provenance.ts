import { createGate, createMemoryJournal, createToolRegistry, defineFamily, defineProfile, defineTool } from "@toolgate/core";
import { z } from "zod";
import { compareTimes, row } from "./measure.js";

const iso = { network: "none", filesystem: "none", secrets: "none", subprocess: "none" } as const;
// A message of about 2 KB with addresses, a link and a code in it: what a session remembers per read.
const message = (i: number) =>
  `From: sender${i}@partner.test\nSubject: update ${i}\n` +
  `Please see https://partner.test/doc/${i}?ref=${1000 + i} and reply to office${i}@partner.test. Code ${100000 + i}.\n` +
  `The quarterly figures (${i}) are attached; the numbers look better than expected in the spring and we plan to review them. `.repeat(16);

const read = defineTool({
  id: "bench.read",
  title: "Read",
  description: "read messages",
  input: z.object({ from: z.number().int(), count: z.number().int() }),
  output: z.object({ messages: z.array(z.string()) }),
  actionType: "read",
  effect: "read",
  requiredAllowlist: ["bench:read"],
  risk: "low",
  approval: "never",
  runtimeIsolation: iso,
  untrustedOutput: true,
  handler: (input: { from: number; count: number }) => ({ messages: Array.from({ length: input.count }, (_, k) => message(input.from + k)) }),
});

const send = defineTool({
  id: "bench.send",
  title: "Send",
  description: "send a short message",
  input: z.object({ to: z.array(z.string()), body: z.string() }),
  output: z.object({ ok: z.boolean() }),
  actionType: "send",
  effect: "write",
  idempotent: true,
  retryable: true,
  reversible: false,
  requiredAllowlist: ["bench:write"],
  risk: "low",
  approval: "never",
  runtimeIsolation: iso,
  untrustedOutput: false,
  provenance: { destinations: ["/to"], content: ["/body"] },
  handler: () => ({ ok: true }),
});

/**
 * What provenance costs a call, measured against the same gate outside a session: a write judged
 * in a session of one trusted text and in one that remembers 100 messages (about 200 KB); a read
 * of ten messages (20 KB) remembered by a new session. Memory journal: the gate's own cost dominates.
 */
export async function benchProvenance(): Promise<string[]> {
  const registry = createToolRegistry({ families: [defineFamily({ name: "bench", tools: [send, read], permissions: ["bench:read", "bench:write"] })] });
  const profile = defineProfile({ name: "bench", allow: ["bench:read", "bench:write"], maxRisk: "low" });
  const gate = createGate({ registry, journal: createMemoryJournal() });
  const contacts = [{ text: "Write to bob@team.test and carol@team.test", label: "contacts" }];
  const plain = { principal: "bench-agent", tenant: "bench", profile };
  const small = { ...plain, session: gate.openSession({ trusted: contacts }) };
  const full = { ...plain, session: gate.openSession({ trusted: contacts }) };
  for (let i = 0; i < 100; i += 10) expectOk(await gate.invoke("bench.read", { from: i, count: 10 }, full));
  let n = 0;
  const write = (call: typeof plain) => async () =>
    expectOk(await gate.invoke("bench.send", { to: ["bob@team.test"], body: `The meeting moved to Friday, note ${n++}` }, call));
  const { wall, cpu } = await compareTimes(
    {
      write: write(plain),
      judged: write(small),
      judgedFull: write(full),
      read: async () => expectOk(await gate.invoke("bench.read", { from: 0, count: 10 }, plain)),
      remembered: async () => expectOk(await gate.invoke("bench.read", { from: 0, count: 10 }, { ...plain, session: gate.openSession() })),
    },
    { rounds: 40, batchSize: 20, warmup: 200 },
  );
  const stats = full.session.stats();
  return [
    "provenance — a write judged in a session, a read remembered (median of 40 interleaved rounds × 20 calls)",
    row("write with a destination rule, no session", wall["write"]!, undefined, cpu["write"]),
    row("  the same write judged in a session of one trusted text", wall["judged"]!, wall["write"], cpu["judged"]),
    row(
      `  judged in a session of ${stats.texts} texts (${Math.round(stats.chars / 1024)} Ki characters)`,
      wall["judgedFull"]!,
      wall["write"],
      cpu["judgedFull"],
    ),
    row("read of ten 2 KB messages, no session", wall["read"]!, undefined, cpu["read"]),
    row("  the same read remembered by a session", wall["remembered"]!, wall["read"], cpu["remembered"]),
  ];
}

function expectOk(r: { status: string }): void {
  if (r.status !== "ok") throw new Error(`expected ok, got ${r.status}: ${JSON.stringify(r).slice(0, 300)}`);
}
