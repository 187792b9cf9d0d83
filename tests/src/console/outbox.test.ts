// An effect left unknown by a worker that died mid-call: the outbox page shows it, a viewer cannot
// resolve it, and an admin's "Not applied" resolves it, recorded under the admin's id.
import type { Page } from "playwright-core";
import { expect, it } from "vitest";
import { csrfOf, describeInBrowser, screenshot, signIn, withConsole } from "./fixtures/harness.js";

describeInBrowser("console in Chromium: the outbox", () => {
  let admin: Page;
  let viewer: Page;
  const desk = withConsole(async ({ project, server, browser }) => {
    admin = await signIn(await browser.newContext(), (await project.addOperator("ada", "admin", server.port)).link);
    viewer = await signIn(await browser.newContext(), (await project.addOperator("vic", "viewer", server.port)).link);
  });

  it("an unknown effect is resolved by an admin's Not applied; a viewer sees it but cannot resolve it", async () => {
    const crashed = await desk.project.call("desk.post_notice", { text: "fire drill at noon", crash: true });
    expect(crashed.code).not.toBe(0); // the worker died between its intent and its result
    expect(desk.project.runs()).toEqual([]);
    const recovered = await desk.project.toolgate("outbox", "recover", "--older-than", "0s");
    expect(recovered.stdout).toContain("1 left for an operator");
    const unknown = JSON.parse((await desk.project.toolgate("outbox", "list", "--state", "unknown", "--json")).stdout) as { key: string }[];
    expect(unknown).toHaveLength(1);
    const key = unknown[0]!.key;

    await viewer.goto(`${desk.server.url}/outbox`);
    await expect(viewer.locator("main").innerText()).resolves.toContain(key);
    await expect(viewer.getByRole("button", { name: "Not applied" }).count()).resolves.toBe(0);
    const forbidden = await viewer.request.post(`${desk.server.url}/outbox/${key}/resolve`, {
      form: { csrf: await csrfOf(viewer), outcome: "not_applied" },
      headers: { origin: desk.server.url },
      maxRedirects: 0,
    });
    expect(forbidden.status()).toBe(403);

    await admin.goto(`${desk.server.url}/outbox`);
    const entry = admin.locator(`[data-outbox-key="${key}"]`);
    await screenshot(admin, "outbox-unknown");
    await Promise.all([admin.waitForNavigation(), entry.getByRole("button", { name: "Not applied" }).click()]);
    expect(new URL(admin.url()).pathname).toBe("/outbox");
    await expect(admin.locator(`[data-outbox-key="${key}"]`).count()).resolves.toBe(0);

    const still = JSON.parse((await desk.project.toolgate("outbox", "list", "--state", "unknown", "--json")).stdout) as unknown[];
    expect(still).toEqual([]);
    const operators = JSON.parse((await desk.project.toolgate("operators", "list", "--json")).stdout) as { id: string; name: string }[];
    const ada = operators.find((o) => o.name === "ada")!.id;
    const resolution = (await desk.project.audit()).filter((e) => JSON.stringify(e).includes(key) && JSON.stringify(e).includes(ada));
    expect(resolution.length).toBeGreaterThan(0);
  });
});
