import { defineTool } from "@toolgate/core";
import { z } from "zod";
import { approvedRaw, composePreview, composeSchema, recipientsOf } from "../compose.js";
import { callGoogle } from "@toolgate/connector-google";
import { GMAIL_SCOPES, SEND_CONSENT } from "../permissions.js";
import { gmailClient } from "../client.js";
import type { GmailConfig } from "../options.js";

export function sendMessageTool(config: GmailConfig) {
  return defineTool({
    id: "gmail.send_message",
    title: "Send an email",
    description:
      "Send a plain-text email from the owner's mailbox. A human approves every send after seeing the sender, every recipient, the subject and the exact body. " +
      "Sending cannot be undone. Recipients outside the operator's allowlist are refused.",
    input: composeSchema(config, true),
    output: z.object({ messageId: z.string(), threadId: z.string(), labelIds: z.array(z.string()) }),
    actionType: "email-send",
    effect: "write",
    requiredAllowlist: ["gmail:send"],
    risk: "high",
    // What an approver may change before it runs (ids stay out: a desk preview reads them as the caller).
    edits: { fields: ["/to", "/cc", "/bcc", "/subject", "/body"] },
    approval: "always",
    // Read back from the composed bytes; the plan fixes them, and the send carries exactly those bytes.
    preview: (input) => composePreview(config, input),
    // Gmail's send has no idempotency key: a repeat would send a second copy.
    idempotent: false,
    retryable: false,
    reversible: false,
    dataEgress: true,
    dataClass: "personal",
    requiredConsent: [SEND_CONSENT],
    connector: { provider: config.provider, scopes: [GMAIL_SCOPES.send] },
    runtimeIsolation: config.isolation,
    provenance: { destinations: ["/to", "/cc", "/bcc"], content: ["/subject", "/body", "/attachments"] },
    untrustedOutput: false,
    target: (input) => `email to ${recipientsOf(config, input).join(", ")}`.slice(0, 256),
    describeResult: (output) => `sent message ${output.messageId}`,
    handler: async (input, ctx) => {
      const raw = await approvedRaw(config, input, ctx.plan);
      const mail = await gmailClient(config, ctx.connector);
      const sent = await callGoogle({ method: "gmail.users.messages.send", repeatable: false, write: true, signal: ctx.signal, retry: config.retry }, () =>
        mail.users.messages.send({ userId: "me", requestBody: { raw, ...(input.threadId ? { threadId: input.threadId } : {}) } }, { signal: ctx.signal }),
      );
      return { messageId: sent.id ?? "", threadId: sent.threadId ?? "", labelIds: sent.labelIds ?? [] };
    },
  });
}
