import { defineTool } from "@toolgate/core";
import { z } from "zod";
import { buildRaw, composeSchema, recipientsOf } from "../compose.js";
import { callGoogle } from "@toolgate/connector-google";
import { GMAIL_SCOPES } from "../permissions.js";
import { gmailClient } from "../client.js";
import type { GmailConfig } from "../options.js";

export function createDraftTool(config: GmailConfig) {
  return defineTool({
    id: "gmail.create_draft",
    title: "Create a draft",
    description: "Save a plain-text draft in the mailbox. Nothing is sent; a human (or gmail.send_draft, with approval) sends it later.",
    input: composeSchema(config, false),
    output: z.object({ draftId: z.string(), messageId: z.string(), threadId: z.string() }),
    actionType: "email-compose",
    effect: "write",
    requiredAllowlist: ["gmail:compose"],
    risk: "medium",
    approval: "never",
    // Gmail has no idempotency key for drafts: a retry could leave a second draft.
    idempotent: false,
    retryable: false,
    reversible: true,
    dataEgress: true,
    dataClass: "personal",
    connector: { provider: config.provider, scopes: [GMAIL_SCOPES.compose] },
    runtimeIsolation: config.isolation,
    provenance: { destinations: ["/to", "/cc", "/bcc"], content: ["/subject", "/body", "/attachments"] },
    untrustedOutput: false,
    target: (input) => `draft to ${recipientsOf(config, input).length} recipients`,
    describeResult: (output) => `draft ${output.draftId}`,
    handler: async (input, ctx) => {
      const raw = await buildRaw(config, input);
      const mail = await gmailClient(config, ctx.connector);
      const draft = await callGoogle({ method: "gmail.users.drafts.create", repeatable: false, write: true, signal: ctx.signal, retry: config.retry }, () =>
        mail.users.drafts.create(
          { userId: "me", requestBody: { message: { raw, ...(input.threadId ? { threadId: input.threadId } : {}) } } },
          { signal: ctx.signal },
        ),
      );
      return { draftId: draft.id ?? "", messageId: draft.message?.id ?? "", threadId: draft.message?.threadId ?? "" };
    },
  });
}
