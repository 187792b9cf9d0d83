import { afterEach, describe, expect, it } from "vitest";
import { startGoogleHarness, type GoogleHarness } from "./index.js";

const READ = "https://www.googleapis.com/auth/gmail.readonly";
const SEND = "https://www.googleapis.com/auth/gmail.send";

let harness: GoogleHarness | undefined;
afterEach(() => harness?.emulator.close());

describe("startGoogleHarness", () => {
  it("grants each connection only the scopes asked for, with tokens from the emulator's endpoint, and names every secret", async () => {
    harness = await startGoogleHarness({ gmail: { address: "owner@example.test" }, scopes: [READ, SEND] });
    const [first] = await harness.vault.list();
    const firstTokens = await harness.vault.readTokens(first!.id);
    expect(firstTokens?.scopes).toEqual([READ, SEND]);
    expect(harness.secrets).toEqual([firstTokens!.accessToken, firstTokens!.refreshToken, harness.emulator.client.clientSecret]);

    const narrow = await harness.connect([READ], { expiresInMs: 0 });
    const [info] = await narrow.vault.list();
    expect((await narrow.vault.readTokens(info!.id))?.scopes).toEqual([READ]);
    const signal = new AbortController().signal;
    const open = (scopes: string[]) =>
      narrow.connectors.open({ provider: "google", scopes, principal: "p", tenant: "t", toolId: "gmail.x", signal, registerSecret: () => undefined });
    await expect(open([SEND])).rejects.toMatchObject({ code: "scope_missing" });
    const before = harness.emulator.oauthStats.refreshes;
    await expect(open([READ])).resolves.toMatchObject({ provider: "google", scopes: [READ] });
    expect(harness.emulator.oauthStats.refreshes - before).toBe(1);
  });
});
