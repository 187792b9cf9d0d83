import { defineTool } from "@toolgate/core";
import { z } from "zod";
import { idSchema } from "../compose.js";
import { callGoogle } from "@toolgate/connector-google";
import { GMAIL_SCOPES } from "../permissions.js";
import { gmailClient } from "../client.js";
import type { GmailConfig } from "../options.js";
import { headerOf } from "../read.js";

export function modifyLabelsTool(config: GmailConfig) {
  return defineTool({
    id: "gmail.modify_labels",
    title: "Change a message's labels",
    description:
      "Add and remove labels on one message (label ids from gmail.list_labels; remove UNREAD to mark it read, add STARRED to star it). A human approves each change.",
    input: z
      .object({
        messageId: idSchema,
        addLabelIds: z.array(idSchema).max(20).default([]),
        removeLabelIds: z.array(idSchema).max(20).default([]),
      })
      .strict()
      .refine((i) => i.addLabelIds.length + i.removeLabelIds.length > 0, "add or remove at least one label")
      .refine((i) => !i.addLabelIds.some((l) => i.removeLabelIds.includes(l)), "a label cannot be both added and removed"),
    output: z.object({ messageId: z.string(), labelIds: z.array(z.string()) }),
    actionType: "email-modify",
    effect: "write",
    requiredAllowlist: ["gmail:modify"],
    risk: "medium",
    // What an approver may change before it runs (ids stay out: a desk preview reads them as the caller).
    edits: { fields: ["/addLabelIds", "/removeLabelIds"] },
    approval: "always",
    preview: async (input, ctx) => {
      const mail = await gmailClient(config, ctx.connector);
      const m = await callGoogle({ method: "gmail.users.messages.get", repeatable: true, write: false, signal: ctx.signal, retry: config.retry }, () =>
        mail.users.messages.get({ userId: "me", id: input.messageId, format: "metadata", metadataHeaders: ["From", "Subject"] }, { signal: ctx.signal }),
      );
      return {
        summary: `Change labels on ${JSON.stringify(headerOf(m.payload, "Subject"))}: +[${input.addLabelIds.join(", ")}] -[${input.removeLabelIds.join(", ")}]`,
        details: {
          messageId: input.messageId,
          from: headerOf(m.payload, "From"),
          subject: headerOf(m.payload, "Subject"),
          before: m.labelIds ?? [],
          add: input.addLabelIds,
          remove: input.removeLabelIds,
        },
      };
    },
    // Adding and removing the same labels again leaves the same state.
    idempotent: true,
    retryable: true,
    reversible: true,
    connector: { provider: config.provider, scopes: [GMAIL_SCOPES.modify] },
    runtimeIsolation: config.isolation,
    provenance: { destinations: ["/messageId"] },
    untrustedOutput: false,
    target: (input) => `message ${input.messageId}`,
    describeResult: (output) => `labels ${output.labelIds.join(", ")}`.slice(0, 256),
    handler: async (input, ctx) => {
      const mail = await gmailClient(config, ctx.connector);
      const m = await callGoogle({ method: "gmail.users.messages.modify", repeatable: true, write: true, signal: ctx.signal, retry: config.retry }, () =>
        mail.users.messages.modify(
          { userId: "me", id: input.messageId, requestBody: { addLabelIds: input.addLabelIds, removeLabelIds: input.removeLabelIds } },
          { signal: ctx.signal },
        ),
      );
      return { messageId: m.id ?? input.messageId, labelIds: m.labelIds ?? [] };
    },
  });
}
