// The console and the workers on one PostgreSQL journal: a request asked by one worker appears live,
// the approval given in the page unblocks the retry on another worker (once), and a kill switch
// thrown in the page stops the tool there.
import type { Page } from "playwright-core";
import { expect, it } from "vitest";
import { describeInBrowser, pgSkipReason, requestIdOf, screenshot, signIn, withConsole } from "./fixtures/harness.js";

describeInBrowser(
  "console in Chromium on a PostgreSQL journal",
  () => {
    let page: Page;
    const desk = withConsole(async ({ project, server, browser }) => {
      page = await signIn(await browser.newContext(), (await project.addOperator("ada", "admin", server.port)).link);
    }, "postgres");

    it("a request asked by one worker appears live; approved in the page, another worker's retry runs it once", async () => {
      expect(new URL(page.url()).pathname).toBe("/approvals");
      const input = { to: "all-hands", text: "the office is closed on friday" };
      const id = requestIdOf(await desk.project.call("desk.send_memo", input));
      const card = page.locator(`article[data-request-id="${id}"]`);
      await card.waitFor({ timeout: 15_000 });
      await screenshot(page, "postgres-approvals");
      await Promise.all([page.waitForNavigation(), card.getByRole("button", { name: "Approve" }).click()]);
      expect((await desk.project.request(id)).status).toBe("granted");

      const [first, second] = await Promise.all([desk.project.call("desk.send_memo", input), desk.project.call("desk.send_memo", input)]);
      // One runs it. The other, racing it, replays its result, is told it is in flight, or (having
      // looked for the grant just as the winner spent it) asks for a new approval: never a second run.
      const outcomes = [first, second].map((r) =>
        r.code === 0 ? "ok" : r.stdout.includes("idempotency_in_flight") ? "in_flight" : r.code === 4 ? "asks_again" : r.stdout,
      );
      expect(outcomes).toContain("ok");
      for (const outcome of outcomes) expect(["ok", "in_flight", "asks_again"]).toContain(outcome);
      expect(desk.project.runs()).toEqual([{ tool: "desk.send_memo", input }]);
      expect((await desk.project.audit()).filter((e) => e.type === "approval.consumed")).toHaveLength(1);
    });

    it("a tool switched off in the page is refused to the other worker, and runs again once switched on", async () => {
      await page.goto(`${desk.server.url}/switches`);
      const form = page.locator('form[action="/switches/disable"]');
      await form.locator('[name="target"]').fill("tool:desk.count_words");
      await form.locator('[name="reason"]').fill("noisy");
      await Promise.all([page.waitForNavigation(), form.getByRole("button", { name: "Disable" }).click()]);
      const refused = await desk.project.call("desk.count_words", { text: "a b" });
      expect(refused.code).toBe(1);
      expect(refused.stdout).toContain("tool_disabled");
      await Promise.all([page.waitForNavigation(), page.getByRole("button", { name: "Enable again" }).click()]);
      expect((await desk.project.call("desk.count_words", { text: "a b" })).code).toBe(0);
    });
  },
  pgSkipReason,
);
