// A runaway caller meets its budget: calls from other processes on the project's journal are
// counted, the one over the limit is refused (rate_limited), and a viewer finds the spent budget on
// the Budgets page, with the time until the next call fits, as `toolgate budgets` reports it.
import type { Page } from "playwright-core";
import { expect, it } from "vitest";
import { describeInBrowser, screenshot, signIn, withConsole } from "./fixtures/harness.js";

describeInBrowser("console in Chromium: budgets", () => {
  let viewer: Page;
  const desk = withConsole(async ({ project, server, browser }) => {
    viewer = await signIn(await browser.newContext(), (await project.addOperator("vic", "viewer", server.port)).link);
  });

  it("a viewer sees the budget two worker processes spent, and the refused third call ran nothing", async () => {
    const count = (text: string) => desk.project.call("desk.count_words", { text }, "--profile", "metered");
    expect((await count("one two")).code).toBe(0);
    expect((await count("three")).code).toBe(0);
    const refused = await count("four five");
    expect(refused.code).toBe(1);
    expect(refused.stdout + refused.stderr).toContain("rate_limited");
    expect(refused.stdout + refused.stderr).toContain('the limit "counts" allows 2 calls per principal every 1 min');
    expect(desk.project.runs().filter((r) => r.tool === "desk.count_words")).toHaveLength(2);

    await viewer.goto(`${desk.server.url}/approvals`);
    await Promise.all([viewer.waitForNavigation(), viewer.getByRole("link", { name: "Budgets" }).click()]);
    expect(new URL(viewer.url()).pathname).toBe("/budgets");
    const row = viewer.locator("table.budgets tbody tr").filter({ has: viewer.locator('[data-limit="metered/counts"]') });
    await expect(row.count()).resolves.toBe(1);
    const cells = await row.locator("td").allInnerTexts();
    expect(cells.slice(0, 5)).toEqual(["metered / counts", "principal", "default", "console-test", "2 of 2"]);
    expect(cells[6]).toMatch(/^\d+(\.\d)? s$/);
    await screenshot(viewer, "budgets");

    const cli = JSON.parse((await desk.project.toolgate("budgets", "--json")).stdout) as { limit: string; used: number; principal?: string }[];
    expect(cli).toEqual([expect.objectContaining({ limit: "counts", used: 2, principal: "console-test" })]);
    const charged = (await desk.project.audit()).filter((e) => e.type === "limit.charged");
    expect(charged).toHaveLength(2);
  });
});
