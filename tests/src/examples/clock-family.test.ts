import { describeToolFamily } from "@toolgate/core/testing";
import { createClockTools } from "./clock-family.js";

describeToolFamily(createClockTools({ reminders: new Map() }), {
  makeContext: () => ({ secrets: ["clock-example-secret"] }),
  validInputs: {
    "clock.list_reminders": { limit: 5 },
    "clock.set_reminder": { at: "2026-12-01T09:00:00Z", text: "water the plants" },
  },
  invalidInputs: {
    "clock.set_reminder": [{ at: "tomorrow", text: "x" }, { at: "2026-12-01T09:00:00Z", text: "" }],
  },
});
