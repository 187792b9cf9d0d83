import { createGate, createMemoryJournal, createToolRegistry, defineFamily, defineProfile, defineTool } from "@toolgate/core";
import { z } from "zod";

const saveNote = defineTool({
  id: "notes.save_note",
  title: "Save a note",
  description: "Save a note. Overwrites the old text.",
  input: z.object({ name: z.string(), text: z.string() }),
  output: z.object({ saved: z.string() }),
  actionType: "notes-write",
  effect: "write",
  requiredAllowlist: ["notes:write"],
  risk: "medium",
  approval: "always",
  preview: ({ name, text }) => ({ summary: `Save note ${name}`, body: text }),
  idempotent: true,
  retryable: true,
  reversible: true,
  untrustedOutput: false,
  runtimeIsolation: { network: "none", filesystem: "none", secrets: "none", subprocess: "none" },
  handler: ({ name }) => ({ saved: name }),
});
const gate = createGate({
  registry: createToolRegistry({ families: [defineFamily({ name: "notes", tools: [saveNote], permissions: ["notes:write"] })] }),
  journal: createMemoryJournal(),
});
const call = { principal: "agent-1", tenant: "acme", profile: defineProfile({ name: "writer", allow: ["notes:write"], maxRisk: "medium" }) };

const asked = await gate.invoke("notes.save_note", { name: "todo", text: "buy milk" }, call);
if (asked.status === "approval_required") {
  // A human reads asked.preview and decides as an authenticated approver (here the project's owner).
  await gate.approvals.grant(asked.requestId, { by: gate.authority.owner() });
  await gate.invoke("notes.save_note", { name: "todo", text: "buy milk" }, call); // the same call, retried, runs once
}
export { gate };
