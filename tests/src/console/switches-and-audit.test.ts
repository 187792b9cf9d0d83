// An admin's path: the kill switch set in the page stops a tool for another worker process sharing
// the journal, and re-enabled it runs again; the audit page verifies the chain and exports it.
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import Database from "better-sqlite3";
import type { Page } from "playwright-core";
import { expect, it } from "vitest";
import { describeInBrowser, screenshot, signIn, withConsole } from "./fixtures/harness.js";

describeInBrowser("console in Chromium: kill switch and audit", () => {
  let page: Page;
  const desk = withConsole(async ({ project, server, browser }) => {
    page = await signIn(await browser.newContext(), (await project.addOperator("ada", "admin", server.port)).link);
  });

  async function disable(target: string, reason: string): Promise<void> {
    await page.goto(`${desk.server.url}/switches`);
    const form = page.locator('form[action="/switches/disable"]');
    await form.locator('[name="target"]').fill(target);
    await form.locator('[name="reason"]').fill(reason);
    await Promise.all([page.waitForNavigation(), form.locator('button, input[type="submit"]').first().click()]);
  }

  async function enable(target: string): Promise<void> {
    const form = page.locator('form[action="/switches/enable"]').filter({ has: page.locator(`input[name="target"][value="${target}"]`) });
    await Promise.all([page.waitForNavigation(), form.locator('button, input[type="submit"]').first().click()]);
  }

  it("a tool switched off in the page is refused to another worker process (tool_disabled) until switched on again", async () => {
    expect((await desk.project.call("desk.count_words", { text: "one two" })).code).toBe(0);
    await disable("tool:desk.count_words", "counting runs away");
    await expect(page.locator("body").innerText()).resolves.toContain("tool:desk.count_words");
    await screenshot(page, "switches");

    const refused = await desk.project.call("desk.count_words", { text: "three four" });
    expect(refused.code).toBe(1);
    expect(refused.stdout).toContain("tool_disabled");
    expect(desk.project.runs().filter((r) => r.tool === "desk.count_words")).toHaveLength(1);
    const refusal = (await desk.project.audit()).filter((e) => JSON.stringify(e).includes("tool_disabled"));
    expect(refusal.length).toBeGreaterThan(0); // journaled like every refusal

    await enable("tool:desk.count_words");
    const again = await desk.project.call("desk.count_words", { text: "five six" });
    expect(again.code).toBe(0);
    expect(desk.project.runs().filter((r) => r.tool === "desk.count_words")).toHaveLength(2);
  });

  it("a whole family switched off stops each of its tools, approval or not, for the other worker", async () => {
    await disable("family:desk", "maintenance");
    const counted = await desk.project.call("desk.count_words", { text: "seven" });
    const memo = await desk.project.call("desk.send_memo", { to: "ops", text: "during maintenance" });
    for (const refused of [counted, memo]) {
      expect(refused.code).toBe(1);
      expect(refused.stdout).toContain("tool_disabled");
    }
    await enable("family:desk");
    expect((await desk.project.call("desk.count_words", { text: "eight" })).code).toBe(0);
  });

  it("the inventory lists each tool with its risk, its approval and the profile that reaches it", async () => {
    await page.goto(`${desk.server.url}/inventory`);
    const rows = page.locator("tr", { hasText: "desk.send_memo" });
    await expect(rows.count()).resolves.toBeGreaterThan(0);
    const memo = await rows.first().innerText();
    expect(memo).toContain("medium");
    expect(memo).toContain("always");
    expect(memo).toContain("writer");
    await expect(page.locator("body").innerText()).resolves.toContain("desk.count_words");
    await screenshot(page, "inventory");
  });

  it("the operators page lists each operator's id, role and status, and never a token or session", async () => {
    await desk.project.addOperator("vic", "viewer", desk.server.port);
    await page.goto(`${desk.server.url}/operators`);
    const rows = await page.locator("main").innerText();
    expect(rows).toMatch(/ada[\s\S]*admin/);
    expect(rows).toMatch(/vic[\s\S]*viewer/);
    const html = await page.content();
    const session = (await page.context().cookies()).find((c) => c.name === "tg_session")!.value;
    expect(html).not.toContain(session);
    expect(html).not.toMatch(/tg[lsc]_[A-Za-z0-9_-]{20,}/);
    await screenshot(page, "operators");
  });

  it("the audit page verifies the chain and shows the result; export downloads the journal as JSON lines", async () => {
    await page.goto(`${desk.server.url}/audit`);
    await Promise.all([page.waitForNavigation(), verifyButton().click()]);
    const shown = await page.locator("body").innerText();
    await screenshot(page, "audit-verified");

    const [download] = await Promise.all([page.waitForEvent("download"), page.locator('a[href^="/audit/export"]').first().click()]);
    const lines = (await readFile(await download.path(), "utf8")).split("\n").filter(Boolean);
    const events = lines.map((line) => JSON.parse(line) as { type: string; seq: number });
    expect(shown).toContain(`Verified. The audit chain holds ${events.length} events`);
    const fromCli = await desk.project.audit();
    expect(events.map((e) => e.type)).toEqual(fromCli.slice(0, events.length).map((e) => e.type));
    expect(lines.join("\n")).not.toMatch(/tg[lsc]_[A-Za-z0-9_-]{20,}/); // sign-in links and sessions appear only as hashes
    // The refusals and the switches themselves are in it (who set them, and why).
    expect(lines.some((line) => line.includes("tool_disabled"))).toBe(true);
    expect(lines.some((line) => line.includes("family:desk") && line.includes("maintenance"))).toBe(true);
  });

  it("an audit event edited in the database: verify in the page fails and names it", async () => {
    const edited = (await desk.project.audit()).find((e) => JSON.stringify(e).includes("maintenance"));
    expect(edited?.["seq"]).toEqual(expect.any(Number));
    const db = new Database(join(desk.project.dir, ".toolgate", "journal.db"));
    try {
      const row = db.prepare("SELECT payload FROM audit WHERE seq = ?").get(edited!["seq"]) as { payload: string };
      expect(row.payload).toContain("maintenance");
      db.prepare("UPDATE audit SET payload = ? WHERE seq = ?").run(row.payload.replace("maintenance", "routine"), edited!["seq"]);
    } finally {
      db.close();
    }
    await page.goto(`${desk.server.url}/audit`);
    await Promise.all([page.waitForNavigation(), verifyButton().click()]);
    const shown = await page.locator("body").innerText();
    expect(shown).not.toContain("Verified.");
    expect(shown).toContain(`broken at #${String(edited!["seq"])}:`);
    await screenshot(page, "audit-tampered");
  });

  function verifyButton() {
    return page.locator('form[action="/audit/verify"] button, form[action="/audit/verify"] input[type="submit"]').first();
  }
});
