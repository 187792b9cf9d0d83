import type { gmail_v1 } from "@googleapis/gmail";
import { ToolError, defineTool } from "@toolgate/core";
import { z } from "zod";
import { idSchema, sha256 } from "../compose.js";
import { callGoogle } from "@toolgate/connector-google";
import { GMAIL_SCOPES, SEND_CONSENT } from "../permissions.js";
import { gmailClient } from "../client.js";
import { recipientAllowed, type GmailConfig } from "../options.js";
import { contentOf } from "../message-content.js";
import { readWireHeaders, recipientAddresses, type Mailbox } from "../recipients.js";

/** What the human approved and the send must match: the exact bytes of the draft they saw. */
const planSchema = z.object({ messageSha256: z.string() });

export function sendDraftTool(config: GmailConfig) {
  const fetchDraft = async (mail: gmail_v1.Gmail, draftId: string, signal: AbortSignal) => {
    const policy = { repeatable: true, write: false, signal, retry: config.retry };
    const raw = await callGoogle({ ...policy, method: "gmail.users.drafts.get" }, () =>
      mail.users.drafts.get({ userId: "me", id: draftId, format: "raw" }, { signal }),
    );
    const bytes = Buffer.from(raw.message?.raw ?? "", "base64url");
    // Everything shown comes from the exact bytes that will be sent: recipients, sender and subject
    // from every header of them, text and attachments from one MIME parse of them.
    const wire = readWireHeaders(bytes);
    const { text, attachments } = await contentOf(bytes);
    return { raw: raw.message?.raw ?? "", digest: sha256(bytes), wire, recipients: recipientAddresses(wire), text, attachments };
  };

  const checkRecipients = (recipients: readonly string[]): void => {
    if (recipients.length === 0) throw new ToolError("provider_rejected", "the draft has no recipients", { boundary: "pre_effect_refusal" });
    if (recipients.length > config.maxRecipients)
      throw new ToolError("limit_exceeded", `the draft has ${recipients.length} recipients; at most ${config.maxRecipients}`, {
        boundary: "pre_effect_refusal",
      });
    const refused = recipients.filter((r) => !recipientAllowed(config, r));
    if (refused.length > 0) {
      throw new ToolError("permission_denied", `the draft is addressed to recipients not on the operator's allowlist: ${refused.join(", ")}`, {
        boundary: "pre_effect_refusal",
        details: { notAllowed: refused },
      });
    }
  };

  return defineTool({
    id: "gmail.send_draft",
    title: "Send a draft",
    description:
      "Send an existing draft. A human approves it after seeing the sender, every recipient, the subject and the exact body; if the draft changes after approval it is not sent. " +
      "Sending cannot be undone.",
    input: z.object({ draftId: idSchema }).strict(),
    output: z.object({ messageId: z.string(), threadId: z.string(), labelIds: z.array(z.string()) }),
    actionType: "email-send",
    effect: "write",
    requiredAllowlist: ["gmail:send"],
    risk: "high",
    // An approver approves or denies this call as asked; nothing in it is edited.
    edits: false,
    approval: "always",
    preview: async (input, ctx) => {
      const mail = await gmailClient(config, ctx.connector);
      const draft = await fetchDraft(mail, input.draftId, ctx.signal);
      checkRecipients(draft.recipients);
      const { wire } = draft;
      const addresses = (list: readonly Mailbox[]) => list.map((m) => m.address);
      return {
        summary: `Send draft ${input.draftId} to ${draft.recipients.length} recipient(s) (${listed(draft.recipients)}): ${JSON.stringify(wire.subject)} (cannot be undone)`,
        details: {
          from: wire.from.length > 0 ? addresses(wire.from).join(", ") : config.from || "the connected Google account",
          to: addresses(wire.to),
          cc: addresses(wire.cc),
          bcc: addresses(wire.bcc),
          // Display names are whatever the draft's author wrote: shown as data beside the address they label.
          displayNames: (["to", "cc", "bcc"] as const).flatMap((field) =>
            wire[field].filter((m) => m.name !== "").map((m) => ({ field, address: m.address, name: m.name })),
          ),
          ...(wire.replyTo.length > 0 ? { replyTo: addresses(wire.replyTo) } : {}),
          subject: wire.subject,
          bodySha256: sha256(Buffer.from(draft.text, "utf8")),
          attachments: draft.attachments,
          messageSha256: draft.digest,
        },
        body: draft.text,
        plan: { messageSha256: draft.digest },
      };
    },
    idempotent: false,
    retryable: false,
    reversible: false,
    dataEgress: true,
    dataClass: "personal",
    requiredConsent: [SEND_CONSENT],
    // drafts.send accepts gmail.compose (not gmail.send), and reading the draft for the preview needs it too.
    connector: { provider: config.provider, scopes: [GMAIL_SCOPES.compose] },
    runtimeIsolation: config.isolation,
    provenance: { destinations: ["/draftId"] },
    untrustedOutput: false,
    target: (input) => `draft ${input.draftId}`,
    describeResult: (output) => `sent message ${output.messageId}`,
    handler: async (input, ctx) => {
      const mail = await gmailClient(config, ctx.connector);
      const approved = planSchema.safeParse(ctx.plan);
      const draft = await fetchDraft(mail, input.draftId, ctx.signal);
      if (!approved.success || approved.data.messageSha256 !== draft.digest) {
        throw new ToolError("conflict", `draft ${input.draftId} changed after it was approved; ask for approval again`, { boundary: "pre_effect_refusal" });
      }
      checkRecipients(draft.recipients);
      // Send the exact bytes that were approved, not whatever the draft holds a moment later.
      const sent = await callGoogle({ method: "gmail.users.drafts.send", repeatable: false, write: true, signal: ctx.signal, retry: config.retry }, () =>
        mail.users.drafts.send({ userId: "me", requestBody: { id: input.draftId, message: { raw: draft.raw } } }, { signal: ctx.signal }),
      );
      return { messageId: sent.id ?? "", threadId: sent.threadId ?? "", labelIds: sent.labelIds ?? [] };
    },
  });
}

/** Addresses for a one-line summary: the first ten, then how many more. */
function listed(addresses: readonly string[]): string {
  return addresses.length <= 10 ? addresses.join(", ") : `${addresses.slice(0, 10).join(", ")} and ${addresses.length - 10} more`;
}
