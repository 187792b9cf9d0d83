// A person's path through the console: sign in with a one-time link, watch a call's request arrive
// live, approve it (the retried call runs once) or deny it (the retried call does not run).
import type { BrowserContext, Page } from "playwright-core";
import { expect, it } from "vitest";
import { describeInBrowser, requestIdOf, screenshot, signIn, withConsole } from "./fixtures/harness.js";

describeInBrowser("console in Chromium: sign in, live queue, approve, deny", () => {
  const desk = withConsole();
  let context: BrowserContext;
  let page: Page;

  it("a one-time link signs in once: opening it spends nothing, pressing Sign in does, and the same link then fails", async () => {
    const { link } = await desk.project.addOperator("ada", "approver", desk.server.port);
    // Opened and left unused (a link preview, a prefetch): GET never spends the token.
    const preview = await desk.browser.newContext();
    const opened = await preview.newPage();
    await opened.goto(link);
    await expect(opened.getByRole("button", { name: "Sign in" }).count()).resolves.toBe(1);
    await screenshot(opened, "login");
    await preview.close();

    context = await desk.browser.newContext();
    page = await signIn(context, link);
    expect(new URL(page.url()).pathname).toBe("/approvals");
    const cookies = await context.cookies();
    const session = cookies.find((c) => c.name === "tg_session");
    expect(session?.httpOnly).toBe(true);
    expect(session?.sameSite).toBe("Strict");
    expect(session?.value).not.toContain("tgl_");

    // The same link a second time, in a fresh browser: refused, and no session comes of it.
    const again = await desk.browser.newContext();
    const second = await signIn(again, link);
    expect(new URL(second.url()).pathname).not.toBe("/approvals");
    expect((await again.cookies()).some((c) => c.name === "tg_session")).toBe(false);
    await screenshot(second, "login-refused");
    const direct = await second.goto(`${desk.server.url}/approvals`);
    expect(new URL(second.url()).pathname).not.toBe("/approvals");
    expect(direct?.status()).toBeLessThan(500);
    await again.close();
    // Neither the link's token nor a session reaches the console's own output.
    expect(desk.server.output()).not.toMatch(/tg[ls]_[A-Za-z0-9_-]{20,}/);
  });

  it("a gate call in another process appears in the open Approvals page without a reload, with its concrete preview", async () => {
    let navigations = 0;
    page.on("framenavigated", (frame) => {
      if (frame === page.mainFrame()) navigations += 1;
    });
    await expect(page.locator("article[data-request-id]").count()).resolves.toBe(0);

    const waiting = await desk.project.call("desk.send_memo", { to: "ops-team", text: "deploy window moves to 18:00" });
    const id = requestIdOf(waiting);
    const card = page.locator(`article[data-request-id="${id}"]`);
    await card.waitFor({ timeout: 15_000 });
    expect(navigations).toBe(0);
    await expect(card.innerText()).resolves.toContain("Send a memo to ops-team");
    await expect(card.innerText()).resolves.toContain("deploy window moves to 18:00");
    await screenshot(page, "approvals-live");
  });

  it("approved in the page, the retried call runs exactly once; the grant is spent by it", async () => {
    const input = { to: "ops-team", text: "deploy window moves to 18:00" };
    const id = requestIdOf(await desk.project.call("desk.send_memo", input)); // the same call again: the same request
    expect(desk.project.runs()).toEqual([]);
    const card = page.locator(`article[data-request-id="${id}"]`);
    await card.getByRole("button", { name: "Approve" }).click();
    await page.waitForLoadState();
    await expect(page.locator(`article[data-request-id="${id}"]`).count()).resolves.toBe(0);
    await screenshot(page, "approvals-approved");

    const decided = await desk.project.request(id);
    expect(decided.status).toBe("granted");
    expect(decided.decidedBy).toMatch(/^op_/); // the signed-in operator's id, never a typed name

    const retried = await desk.project.call("desk.send_memo", input);
    expect(retried.code).toBe(0);
    expect(desk.project.runs()).toEqual([{ tool: "desk.send_memo", input }]);

    // The same call once more is the same effect: its recorded result is replayed, nothing runs.
    const replay = await desk.project.call("desk.send_memo", input);
    expect(replay.code).toBe(0);
    expect(replay.stdout).toContain("replayed");
    // The grant is spent: another call with this input (a new idempotency key) waits for a human again.
    const another = await desk.project.call("desk.send_memo", input, "--key", "memo-2");
    expect(another.code).toBe(4);
    expect(requestIdOf(another)).not.toBe(id);
    expect(desk.project.runs()).toHaveLength(1);
    const events = await desk.project.audit();
    expect(events.filter((e) => e.type === "approval.consumed")).toHaveLength(1);
    expect(events.filter((e) => e.type === "approval.granted" && JSON.stringify(e).includes(id))).toHaveLength(1);
  });

  it("denied in the page with a reason, the retried call does not run (it waits for a new decision) and the denial stays on record", async () => {
    const input = { to: "finance", text: "wire the money today" };
    const id = requestIdOf(await desk.project.call("desk.send_memo", input));
    const card = page.locator(`article[data-request-id="${id}"]`);
    await card.waitFor({ timeout: 15_000 });
    await card.locator('[name="reason"]').fill("not without the invoice");
    await card.getByRole("button", { name: "Deny" }).click();
    await page.waitForLoadState();
    await expect(page.locator(`article[data-request-id="${id}"]`).count()).resolves.toBe(0);

    const decided = await desk.project.request(id);
    expect(decided.status).toBe("denied");
    expect(decided.reason).toBe("not without the invoice");
    expect(decided.decidedBy).toMatch(/^op_/);

    // The retry does not run: the denied request is not taken, the call waits for a new decision.
    const retried = await desk.project.call("desk.send_memo", input);
    expect(requestIdOf(retried)).not.toBe(id);
    expect((await desk.project.request(id)).status).toBe("denied");
    expect(desk.project.runs().filter((r) => r.tool === "desk.send_memo" && JSON.stringify(r.input) === JSON.stringify(input))).toEqual([]);
    const events = await desk.project.audit();
    expect(events.some((e) => e.type === "approval.denied" && JSON.stringify(e).includes("not without the invoice"))).toBe(true);
  });
});
