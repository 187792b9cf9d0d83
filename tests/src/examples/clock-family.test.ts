import { describeToolFamily } from "@toolgate/core/testing";
import { createClockTools } from "./clock-family.js";

const reminders = new Map<string, { at: string; text: string }>();
describeToolFamily(createClockTools({ reminders }), {
  makeContext: () => ({ secrets: ["clock-example-secret"] }),
  validInputs: {
    "clock.list_reminders": { limit: 5 },
    "clock.set_reminder": { at: "2026-12-01T09:00:00Z", text: "water the plants" },
  },
  invalidInputs: {
    "clock.set_reminder": [
      { at: "tomorrow", text: "x" },
      { at: "2026-12-01T09:00:00Z", text: "" },
    ],
  },
  // A secret put where each tool returns it: the suite checks the gate never lets it out.
  plantSecret: (toolId, secret) => {
    reminders.set("planted", { at: "2026-12-01T08:00:00Z", text: secret });
    return toolId === "clock.set_reminder" ? { at: "2026-12-01T09:00:00Z", text: secret } : { limit: 5 };
  },
});
