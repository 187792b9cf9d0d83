// The people at the console: the two-person rule between two signed-in approvers, an operator
// disabled from the CLI mid-session, signing out, and a hostile preview shown as plain text.
import type { Page } from "playwright-core";
import { expect, it } from "vitest";
import { describeInBrowser, requestIdOf, screenshot, signIn, withConsole } from "./fixtures/harness.js";

describeInBrowser("console in Chromium: people and their sessions", () => {
  const desk = withConsole();

  async function operator(name: string, role: "viewer" | "approver" | "admin"): Promise<Page> {
    const page = await signIn(await desk.browser.newContext(), (await desk.project.addOperator(name, role, desk.server.port)).link);
    expect(new URL(page.url()).pathname).toBe("/approvals");
    return page;
  }

  async function approve(page: Page, id: string): Promise<string> {
    const card = page.locator(`article[data-request-id="${id}"]`);
    await card.waitFor({ timeout: 15_000 });
    await Promise.all([page.waitForNavigation(), card.getByRole("button", { name: "Approve" }).click()]);
    return page.locator("main").innerText();
  }

  it("under the two-person rule the first approval keeps the call waiting, the same person twice is refused, a second person lets the retry run once", async () => {
    const [ada, bo] = [await operator("ada", "approver"), await operator("bo", "approver")];
    const input = { to: "treasury", text: "move the reserve" };
    const id = requestIdOf(await desk.project.call("desk.send_memo", input, "--profile", "pair"));

    expect(await approve(ada, id)).toContain("needs a second, different approver");
    const waiting = await desk.project.call("desk.send_memo", input, "--profile", "pair");
    expect(requestIdOf(waiting)).toBe(id); // the same request, still one approval short
    expect(desk.project.runs()).toEqual([]);
    await ada.locator(`article[data-request-id="${id}"][data-approvals="1/2"]`).waitFor({ timeout: 15_000 });
    await screenshot(ada, "approvals-two-person");

    const twice = await approve(ada, id);
    expect(twice).not.toContain("Approved.");
    expect(twice).toContain("needs a second, different approver (approval_invalid)");
    expect((await desk.project.request(id)).status).toBe("pending");
    expect(desk.project.runs()).toEqual([]);

    // Ada watches the queue while Bo decides: the request leaves her page live, without a reload.
    await ada.goto(`${desk.server.url}/approvals`);
    let reloads = 0;
    ada.on("framenavigated", (frame) => void (frame === ada.mainFrame() && (reloads += 1)));
    expect(await approve(bo, id)).toContain("Approved.");
    await ada.locator(`article[data-request-id="${id}"]`).waitFor({ state: "detached", timeout: 15_000 });
    expect(reloads).toBe(0);
    const decided = await desk.project.request(id);
    expect(decided.status).toBe("granted");
    const by = (decided["approvals"] as { by: string }[]).map((a) => a.by);
    expect(by).toHaveLength(2);
    expect(new Set(by).size).toBe(2);
    expect((await desk.project.call("desk.send_memo", input, "--profile", "pair")).code).toBe(0);
    expect(desk.project.runs()).toEqual([{ tool: "desk.send_memo", input }]);
  });

  it("an operator disabled from the CLI is out at once: the open page's Approve is refused and nothing is decided", async () => {
    const cy = await operator("cy", "approver");
    const id = requestIdOf(await desk.project.call("desk.send_memo", { to: "ops", text: "cy is leaving" }));
    await cy.locator(`article[data-request-id="${id}"]`).waitFor({ timeout: 15_000 });
    expect((await desk.project.toolgate("operators", "disable", "cy")).code).toBe(0);
    const [response] = await Promise.all([
      cy.waitForResponse((r) => r.request().method() === "POST"),
      cy.locator(`article[data-request-id="${id}"]`).getByRole("button", { name: "Approve" }).click(),
    ]);
    expect(response.status()).toBe(403);
    expect((await desk.project.request(id)).status).toBe("pending");
    await cy.goto(`${desk.server.url}/approvals`);
    expect(new URL(cy.url()).pathname).toBe("/login");
  });

  it("signing out ends the session: the old cookie opens nothing any more", async () => {
    const dee = await operator("dee", "viewer");
    const [cookie] = (await dee.context().cookies()).filter((c) => c.name === "tg_session");
    expect(cookie).toBeDefined();
    await Promise.all([dee.waitForNavigation(), dee.getByRole("button", { name: "Sign out" }).click()]);
    expect(new URL(dee.url()).pathname).toBe("/login");

    const replay = await desk.browser.newContext();
    await replay.addCookies([cookie!]);
    const page = await replay.newPage();
    await page.goto(`${desk.server.url}/approvals`);
    expect(new URL(page.url()).pathname).toBe("/login");
    await replay.close();
  });

  it("a preview carrying markup is shown as text: no element, no script, no dialog", async () => {
    const page = await operator("eve", "viewer");
    let dialogs = 0;
    page.on("dialog", (dialog) => {
      dialogs += 1;
      void dialog.dismiss();
    });
    const to = `<img src=x onerror="document.title='owned'">`;
    const text = `</pre><script>document.title='owned'</script><a href="javascript:alert(1)">open</a>`;
    const id = requestIdOf(await desk.project.call("desk.send_memo", { to, text }));
    const card = page.locator(`article[data-request-id="${id}"]`);
    await card.waitFor({ timeout: 15_000 });
    const shown = await card.innerText();
    expect(shown).toContain(`Send a memo to ${to}`);
    expect(shown).toContain(text);
    await expect(card.locator("img, script, a[href^='javascript']").count()).resolves.toBe(0);
    await page.reload();
    await card.waitFor();
    await expect(card.locator("img, script, a[href^='javascript']").count()).resolves.toBe(0);
    expect(await page.title()).not.toBe("owned");
    expect(dialogs).toBe(0);
    await screenshot(page, "approvals-hostile-preview");
  });
});
