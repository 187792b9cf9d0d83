import { defineTool } from "@toolgate/core";
import { z } from "zod";
import { callGoogle } from "@toolgate/connector-google";
import { GMAIL_SCOPES } from "../permissions.js";
import { gmailClient } from "../client.js";
import type { GmailConfig } from "../options.js";

export function listLabelsTool(config: GmailConfig) {
  return defineTool({
    id: "gmail.list_labels",
    title: "List labels",
    description: "List the mailbox's labels (system and user) with their ids, for searching and for gmail.modify_labels.",
    input: z.object({}).strict(),
    output: z.object({ labels: z.array(z.object({ id: z.string(), name: z.string(), type: z.enum(["system", "user"]) })) }),
    actionType: "email-read",
    effect: "read",
    requiredAllowlist: ["gmail:read"],
    risk: "low",
    approval: "never",
    connector: { provider: config.provider, scopes: [GMAIL_SCOPES.readonly] },
    runtimeIsolation: config.isolation,
    untrustedOutput: true,
    target: () => "mailbox labels",
    describeResult: (output) => `${output.labels.length} labels`,
    handler: async (_input, ctx) => {
      const mail = await gmailClient(config, ctx.connector);
      const res = await callGoogle({ method: "gmail.users.labels.list", repeatable: true, write: false, signal: ctx.signal, retry: config.retry }, () =>
        mail.users.labels.list({ userId: "me" }, { signal: ctx.signal }),
      );
      return {
        labels: (res.labels ?? []).map((l) => ({ id: l.id ?? "", name: l.name ?? "", type: l.type === "system" ? ("system" as const) : ("user" as const) })),
      };
    },
  });
}
