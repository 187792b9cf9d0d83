import { defineTool } from "@toolgate/core";
import { z } from "zod";
import { idSchema } from "../compose.js";
import { callGoogle } from "@toolgate/connector-google";
import { GMAIL_SCOPES } from "../permissions.js";
import { gmailClient } from "../client.js";
import type { GmailConfig } from "../options.js";
import { headerOf } from "../read.js";

export function trashMessageTool(config: GmailConfig) {
  return defineTool({
    id: "gmail.trash_message",
    title: "Move a message to the trash",
    description:
      "Move one message to the trash. Gmail deletes trashed mail for good after 30 days; until then a human can restore it. A human approves each call.",
    input: z.object({ messageId: idSchema }).strict(),
    output: z.object({ messageId: z.string(), labelIds: z.array(z.string()) }),
    actionType: "email-modify",
    effect: "write",
    requiredAllowlist: ["gmail:modify"],
    risk: "medium",
    // An approver approves or denies this call as asked; nothing in it is edited.
    edits: false,
    approval: "always",
    preview: async (input, ctx) => {
      const mail = await gmailClient(config, ctx.connector);
      const m = await callGoogle({ method: "gmail.users.messages.get", repeatable: true, write: false, signal: ctx.signal, retry: config.retry }, () =>
        mail.users.messages.get(
          { userId: "me", id: input.messageId, format: "metadata", metadataHeaders: ["From", "Subject", "Date"] },
          { signal: ctx.signal },
        ),
      );
      return {
        summary: `Move ${JSON.stringify(headerOf(m.payload, "Subject"))} to the trash (deleted for good after 30 days)`,
        details: { messageId: input.messageId, from: headerOf(m.payload, "From"), subject: headerOf(m.payload, "Subject"), date: headerOf(m.payload, "Date") },
      };
    },
    idempotent: true,
    retryable: true,
    reversible: true,
    connector: { provider: config.provider, scopes: [GMAIL_SCOPES.modify] },
    runtimeIsolation: config.isolation,
    provenance: { destinations: ["/messageId"] },
    untrustedOutput: false,
    target: (input) => `message ${input.messageId}`,
    describeResult: (output) => `trashed ${output.messageId}`,
    handler: async (input, ctx) => {
      const mail = await gmailClient(config, ctx.connector);
      const m = await callGoogle({ method: "gmail.users.messages.trash", repeatable: true, write: true, signal: ctx.signal, retry: config.retry }, () =>
        mail.users.messages.trash({ userId: "me", id: input.messageId }, { signal: ctx.signal }),
      );
      return { messageId: m.id ?? input.messageId, labelIds: m.labelIds ?? [] };
    },
  });
}
