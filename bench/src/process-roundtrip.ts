import { fileURLToPath } from "node:url";
import { createGate, createMemoryJournal, createToolRegistry, defineProfile } from "@toolgate/core";
import { startToolProcess } from "@toolgate/process";
import { compareMicros, row } from "./measure.js";

/** Round trips over stdio to a trivial tool process written with the SDK, each through the gate. */
export async function benchProcessRoundtrip(): Promise<string[]> {
  const child = fileURLToPath(new URL("./process-echo-tool.js", import.meta.url));
  const handle = await startToolProcess({
    name: "bench",
    command: process.execPath,
    args: [child],
    expectedScopes: { echo: "bench:echo" },
    tools: { echo: { effect: "none", risk: "low" } },
    onLog: () => undefined,
  });
  try {
    const gate = createGate({ registry: createToolRegistry({ families: [handle.family] }), journal: createMemoryJournal() });
    const call = { principal: "bench-agent", tenant: "bench", profile: defineProfile({ name: "bench", allow: handle.family.permissions, maxRisk: "low" }) };
    const once = async (): Promise<void> => {
      const result = await gate.invoke("bench.echo", { text: "ping" }, call);
      if (result.status !== "ok") throw new Error(`bench call failed: ${result.status}`);
    };
    const inFlight = 64;
    const m = await compareMicros(
      {
        sequential: once,
        parallel: () => Promise.all(Array.from({ length: inFlight }, once)),
      },
      { rounds: 30, batchSize: 20, warmup: 200 },
    );
    const sequential = m["sequential"]!;
    const parallel = m["parallel"]! / inFlight;
    return [
      "tool process round trip over stdio — trivial tool, through the gate (median of 30 interleaved rounds)",
      row("one call at a time", sequential),
      row(`${inFlight} calls in flight (per call)`, parallel),
      `round trips/s: ${Math.round(1e6 / sequential)} sequential, ${Math.round(1e6 / parallel)} with ${inFlight} in flight`,
    ];
  } finally {
    await handle.stop();
  }
}
