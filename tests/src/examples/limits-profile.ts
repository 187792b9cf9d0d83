import { defineProfile } from "@toolgate/core";

export const assistant = defineProfile({
  name: "assistant",
  allow: ["gmail:read", "gmail:compose", "gmail:send"],
  maxRisk: "high",
  limits: [
    // At most 20 sends per person a day, counted across every worker sharing the journal.
    { name: "sends", tools: ["gmail.send_message", "gmail.send_draft"], per: "principal", max: 20, windowMs: 86_400_000 },
    // At most 600 calls of any tool per tenant a minute.
    { name: "calls", tools: "*", per: "tenant", max: 600, windowMs: 60_000 },
    // At most 4 Gmail calls in flight at once, per tool, in each worker.
    { name: "gmail-in-flight", tools: ["gmail.*"], maxConcurrent: 4 },
  ],
});
