// What the console refuses, driven from a real browser: a viewer's approval, a form without the
// session's CSRF token, and a form posted from another origin; each time nothing is decided.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { BrowserContext, Page } from "playwright-core";
import { afterAll, expect, it } from "vitest";
import { csrfOf, describeInBrowser, requestIdOf, screenshot, signIn, withConsole } from "./fixtures/harness.js";

describeInBrowser("console in Chromium: what it refuses", () => {
  let admin: BrowserContext;
  let page: Page;
  let foreign: Server | undefined;
  let foreignUrl: string;
  let forgedForm = "";
  const desk = withConsole(async ({ project, server, browser }) => {
    admin = await browser.newContext();
    page = await signIn(admin, (await project.addOperator("grace", "admin", server.port)).link);
    // Another origin on the same machine (a different port is a different origin, yet the same
    // site, so SameSite cookies alone would not stop its forms): it serves whatever page a test sets.
    foreign = createServer((_req, res) => {
      res.writeHead(200, { "content-type": "text/html; charset=utf-8" });
      res.end(forgedForm);
    });
    await new Promise<void>((resolve) => foreign!.listen(0, "127.0.0.1", resolve));
    foreignUrl = `http://127.0.0.1:${(foreign.address() as AddressInfo).port}/`;
  });
  afterAll(async () => {
    await new Promise((resolve) => foreign?.close(resolve));
  });

  /** A fresh request waiting in the queue, shown on the approver's page. */
  async function pending(text: string): Promise<string> {
    const id = requestIdOf(await desk.project.call("desk.send_memo", { to: "board", text }));
    await page.locator(`article[data-request-id="${id}"]`).waitFor({ timeout: 15_000 });
    return id;
  }

  it("a viewer sees the queue without Approve or Deny buttons, and its session's approve and deny are 403", async () => {
    const id = await pending("viewer sees this");
    const viewer = await desk.browser.newContext();
    const seen = await signIn(viewer, (await desk.project.addOperator("vera", "viewer", desk.server.port)).link);
    expect(new URL(seen.url()).pathname).toBe("/approvals");
    const card = seen.locator(`article[data-request-id="${id}"]`);
    await card.waitFor({ timeout: 15_000 });
    await expect(card.innerText()).resolves.toContain("viewer sees this");
    await expect(seen.getByRole("button", { name: "Approve" }).count()).resolves.toBe(0);
    await expect(seen.getByRole("button", { name: "Deny" }).count()).resolves.toBe(0);
    await screenshot(seen, "approvals-viewer");

    // The viewer's own valid session and CSRF token, posted as the page would: still forbidden.
    const csrf = await csrfOf(seen);
    const headers = { origin: desk.server.url };
    const approve = await seen.request.post(`${desk.server.url}/approvals/${id}/approve`, { form: { csrf, ttl: "10" }, headers, maxRedirects: 0 });
    expect(approve.status()).toBe(403);
    const deny = await seen.request.post(`${desk.server.url}/approvals/${id}/deny`, { form: { csrf, reason: "no" }, headers, maxRedirects: 0 });
    expect(deny.status()).toBe(403);
    const kill = await seen.request.post(`${desk.server.url}/switches/disable`, {
      form: { csrf, target: "tool:desk.count_words", reason: "x" },
      headers,
      maxRedirects: 0,
    });
    expect(kill.status()).toBe(403);
    expect((await desk.project.request(id)).status).toBe("pending");
    expect((await desk.project.call("desk.count_words", { text: "still on" })).code).toBe(0);
    await viewer.close();
  });

  it("an approve or deny without the session's CSRF token (missing, wrong, another session's) is 403 and decides nothing", async () => {
    const id = await pending("csrf guarded");
    const headers = { origin: desk.server.url };
    const post = (path: string, form: Record<string, string>) => page.request.post(`${desk.server.url}${path}`, { form, headers, maxRedirects: 0 });
    const other = await desk.browser.newContext();
    const otherCsrf = await csrfOf(await signIn(other, (await desk.project.addOperator("otto", "approver", desk.server.port)).link));
    const mine = await csrfOf(page);
    expect(otherCsrf).not.toBe(mine);
    for (const csrf of [undefined, "", "x", mine.slice(0, -1), otherCsrf]) {
      const token: Record<string, string> = csrf === undefined ? {} : { csrf };
      expect((await post(`/approvals/${id}/approve`, { ...token, ttl: "10" })).status()).toBe(403);
      expect((await post(`/approvals/${id}/deny`, { ...token, reason: "forged" })).status()).toBe(403);
    }
    expect((await post("/switches/disable", { target: "tool:desk.count_words", reason: "forged" })).status()).toBe(403);
    await other.close();
    expect((await desk.project.request(id)).status).toBe("pending");
    expect((await desk.project.call("desk.count_words", { text: "still on" })).code).toBe(0);
    await expect(page.locator(`article[data-request-id="${id}"]`).count()).resolves.toBe(1);
  });

  it("a form on another origin, submitted in the signed-in browser, is refused with or without a token and decides nothing", async () => {
    const id = await pending("cross-origin target");
    const csrf = await csrfOf(page); // even a leaked token does not help a page of another origin
    const field = (name: string, value: string) => `<input type="hidden" name="${name}" value="${value}">`;
    for (const [action, fields] of [
      [`/approvals/${id}/approve`, field("ttl", "10")],
      [`/approvals/${id}/approve`, field("ttl", "10") + field("csrf", csrf)],
      [`/approvals/${id}/deny`, field("reason", "forged") + field("csrf", csrf)],
      ["/switches/disable", field("target", "family:desk") + field("reason", "forged") + field("csrf", csrf)],
    ] as const) {
      forgedForm = `<!doctype html><title>win a prize</title><form method="post" action="${desk.server.url}${action}">${fields}<button>Claim</button></form>`;
      const attacker = await admin.newPage();
      await attacker.goto(foreignUrl);
      const [response] = await Promise.all([
        attacker.waitForResponse((r) => r.url().startsWith(desk.server.url)),
        attacker.getByRole("button", { name: "Claim" }).click(),
      ]);
      expect(response.status()).toBe(403);
      if (action === "/switches/disable") await screenshot(attacker, "forged-form-refused");
      await attacker.close();
    }
    expect((await desk.project.request(id)).status).toBe("pending");
    expect((await desk.project.call("desk.count_words", { text: "still on" })).code).toBe(0);
  });
});
