import { defineFamily, defineTool } from "@toolgate/core";
import { z } from "zod";

/** Options an operator sets when composing the family. */
export interface ClockToolsOptions {
  /** Where reminders are kept; a real family would take a client here. */
  readonly reminders: Map<string, { at: string; text: string }>;
}

export function createClockTools(options: ClockToolsOptions) {
  const isolation = { network: "none", filesystem: "none", secrets: "none", subprocess: "none" } as const;

  const listReminders = defineTool({
    id: "clock.list_reminders",
    title: "List reminders",
    description: "List the reminders that are set, soonest first.",
    input: z.object({ limit: z.number().int().min(1).max(100).default(20) }),
    output: z.object({ reminders: z.array(z.object({ id: z.string(), at: z.string(), text: z.string() })) }),
    actionType: "reminder-read",
    effect: "read",
    requiredAllowlist: ["clock:read"],
    risk: "low",
    approval: "never",
    runtimeIsolation: isolation,
    untrustedOutput: true, // reminder texts may have been written by someone else
    handler: ({ limit }) => ({
      reminders: [...options.reminders.entries()]
        .map(([id, r]) => ({ id, ...r }))
        .sort((a, b) => a.at.localeCompare(b.at))
        .slice(0, limit),
    }),
  });

  const setReminder = defineTool({
    id: "clock.set_reminder",
    title: "Set a reminder",
    description: "Set a reminder at a time. Setting it again with the same idempotency key changes nothing.",
    input: z.object({ at: z.iso.datetime(), text: z.string().min(1).max(500) }).strict(),
    output: z.object({ id: z.string(), created: z.boolean(), text: z.string() }),
    actionType: "reminder-write",
    effect: "write",
    requiredAllowlist: ["clock:write"],
    risk: "medium",
    approval: "always",
    preview: ({ at, text }) => ({ summary: `Remind at ${at}`, body: text }),
    idempotent: true,
    retryable: true,
    reversible: true,
    runtimeIsolation: isolation,
    untrustedOutput: false,
    target: ({ at }) => `reminder at ${at}`,
    // The gate's idempotency key names the reminder, so a replay after a crash finds it again.
    handler: ({ at, text }, ctx) => {
      const id = `r-${ctx.idempotencyKey.slice(0, 16)}`;
      const created = !options.reminders.has(id);
      if (created) options.reminders.set(id, { at, text });
      return { id, created, text: options.reminders.get(id)?.text ?? text };
    },
  });

  return defineFamily({
    name: "clock",
    description: "Reminders kept in memory: the example family of the docs.",
    tools: [listReminders, setReminder],
    permissions: ["clock:read", "clock:write"],
  });
}
