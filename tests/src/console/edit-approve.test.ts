// Approve with edits, end to end: the agent's call waits in a real `toolgate` process, a person in
// Chromium edits it in the console (a wrong recipient removed, an event moved), checks the recomputed
// preview and approves; the caller's retry with its ORIGINAL input runs the edited call once against
// the Google emulator on 127.0.0.1, and the journal holds both inputs. Negative: an edit of a field
// that is not editable, or outside the schema, is refused; a grant for the edited input cannot run
// the original, and the edited input sent by a caller is a new request, not the grant.
import { fileURLToPath } from "node:url";
import type { BrowserContext, Page } from "playwright-core";
import { afterAll, expect, it } from "vitest";
import { startGoogleEmulator, type GoogleEmulator } from "@toolgate/emulators";
import { GMAIL_SCOPES } from "@toolgate/tools-gmail";
import { CALENDAR_SCOPES } from "@toolgate/tools-calendar";
import { describeInBrowser, requestIdOf, screenshot, signIn, withConsole } from "./fixtures/harness.js";

const OWNER = "owner@example.test";
const config = fileURLToPath(new URL("./fixtures/mail-calendar.config.mjs", import.meta.url));
let google: GoogleEmulator | undefined;

/** The emulator, one connection's tokens (exchanged as an OAuth client would), and the project's environment. */
async function emulatorProject() {
  google = await startGoogleEmulator({ gmail: { address: OWNER } });
  const scopes = [...Object.values(GMAIL_SCOPES), ...Object.values(CALENDAR_SCOPES)];
  const { clientId, clientSecret } = google.client;
  const form = new URLSearchParams({
    grant_type: "authorization_code",
    code: google.authorize({ scopes }).code,
    client_id: clientId,
    client_secret: clientSecret,
  });
  const answer = await fetch(google.tokenUrl, { method: "POST", body: form });
  if (!answer.ok) throw new Error(`the token endpoint answered ${answer.status}`);
  const tokens = (await answer.json()) as { access_token: string; refresh_token: string; expires_in: number; scope: string };
  return {
    config,
    env: {
      G_ROOT: google.url,
      G_ID: clientId,
      G_SECRET: clientSecret,
      G_TOKEN: google.tokenUrl,
      G_OWNER: OWNER,
      G_ACCESS: tokens.access_token,
      G_REFRESH: tokens.refresh_token,
      G_EXPIRES: String(Date.now() + tokens.expires_in * 1000),
      G_SCOPES: tokens.scope,
    },
  };
}

describeInBrowser("console in Chromium: approve with edits (mail and calendar, Google emulator)", () => {
  const desk = withConsole(undefined, emulatorProject);
  afterAll(async () => {
    await google?.close();
  });
  let context: BrowserContext;
  let page: Page;
  const agent = (tool: string, input: unknown, ...flags: string[]) => desk.project.call(tool, input, "--profile", "assistant", ...flags);

  /** Open the request's edit form from its card in the queue, as a person would. */
  async function openEdit(id: string): Promise<void> {
    await page.goto(`${desk.server.url}/approvals`);
    const card = page.locator(`article[data-request-id="${id}"]`);
    await card.waitFor({ timeout: 15_000 });
    await card.getByRole("link", { name: "Edit…" }).click();
    await page.waitForLoadState();
  }

  const mail = { to: ["ana@example.test", "wrong@example.test"], subject: "Quarterly plan", body: "Ana, the plan is attached below.\nBest" };
  const mailEdited = { ...mail, to: ["ana@example.test"] };

  it("mail: the person removes a wrong recipient, checks and approves; the original's retry sends the edited mail once", async () => {
    const { link } = await desk.project.addOperator("ada", "approver", desk.server.port);
    context = await desk.browser.newContext({ viewport: { width: 1100, height: 900 } });
    page = await signIn(context, link);

    const id = requestIdOf(await agent("gmail.send_message", mail));
    await openEdit(id);
    expect(new URL(page.url()).pathname).toBe(`/approvals/${id}/edit`);
    const to = page.locator('textarea[name="f:/to"]');
    expect(JSON.parse(await to.inputValue())).toEqual(mail.to);
    // Ids are not editable: no field for the thread.
    await expect(page.locator('textarea[name="f:/threadId"]').count()).resolves.toBe(0);
    await to.fill(JSON.stringify(mailEdited.to, null, 2));
    await screenshot(page, "console-edit-form");

    await page.getByRole("button", { name: "Check the edited call" }).click();
    await page.waitForLoadState();
    const check = await page.locator("main").innerText();
    expect(check).toContain("Send an email to 1 recipient(s)");
    await expect(page.locator('table.changes tr[data-path="/to"] li.del').innerText()).resolves.toBe("wrong@example.test");
    await screenshot(page, "console-edit-check");
    // Checking wrote nothing yet.
    expect((await desk.project.request(id)).edit).toBeUndefined();

    await page.getByRole("button", { name: "Approve edited call" }).click();
    await page.waitForLoadState();
    expect(await page.locator("main").innerText()).toContain("Approved.");
    expect(google!.gmail.sent).toHaveLength(0);

    // The caller retries with the input it sent: the edited mail goes out, once, to Ana only.
    const retried = await agent("gmail.send_message", mail);
    expect(retried.code, retried.stderr).toBe(0);
    expect(retried.stdout).toContain(`An approver changed the input of gmail.send_message before it ran (request ${id})`);
    expect(retried.stdout).toContain("wrong@example.test"); // the change, fenced, so the model does not send it again
    expect(google!.gmail.sent.map((m) => m.to)).toEqual([["ana@example.test"]]);
    const again = await agent("gmail.send_message", mail);
    expect(again.code).toBe(0);
    expect(again.stdout).toContain("replayed");
    expect(google!.gmail.sent).toHaveLength(1);

    // The journal holds both inputs, who edited and the diff.
    const shown = await desk.project.request(id);
    expect(shown["input"]).toMatchObject(mail);
    expect(shown["edit"]).toMatchObject({ version: 1, input: mailEdited, changes: [{ path: "/to" }] });
    const events = await desk.project.audit();
    const requested = events.find((e) => e.type === "approval.requested" && JSON.stringify(e).includes(id));
    const edited = events.find((e) => e.type === "approval.edited" && JSON.stringify(e).includes(id));
    expect(requested?.data?.["inputHash"] ?? shown["inputHash"]).toBe(shown["inputHash"]);
    expect(edited?.data).toMatchObject({ version: 1, fromInputHash: shown["inputHash"], inputHash: (shown["edit"] as { inputHash: string }).inputHash });
    expect(edited?.data?.["inputHash"]).not.toBe(edited?.data?.["fromInputHash"]);
    expect(events.some((e) => e.type === "intent.recorded" && JSON.stringify(e).includes(id))).toBe(true);
    // No token or secret reaches the console's own output.
    expect(desk.server.output()).not.toContain(desk.project.env["G_ACCESS"]!);
  });

  it("calendar: the person moves the event from 10:00 to 11:00; one event at 11:00, none at 10:00", async () => {
    const event = { summary: "Design review", start: { dateTime: "2026-12-03T10:00:00Z" }, end: { dateTime: "2026-12-03T10:30:00Z" } };
    const moved = { start: { dateTime: "2026-12-03T11:00:00Z" }, end: { dateTime: "2026-12-03T11:30:00Z" } };
    const id = requestIdOf(await agent("calendar.create_event", event));
    await openEdit(id);
    await expect(page.locator('textarea[name="f:/calendarId"]').count()).resolves.toBe(0);
    await page.locator('textarea[name="f:/start"]').fill(JSON.stringify(moved.start));
    await page.locator('textarea[name="f:/end"]').fill(JSON.stringify(moved.end));
    await page.getByRole("button", { name: "Check the edited call" }).click();
    await page.waitForLoadState();
    expect(await page.locator('table.changes tr[data-path="/start/dateTime"]').count(), await page.locator("main").innerText()).toBe(1);
    await page.getByRole("button", { name: "Approve edited call" }).click();
    await page.waitForLoadState();

    const retried = await agent("calendar.create_event", event);
    expect(retried.code, retried.stderr).toBe(0);
    const events = google!.calendar.events().filter((e) => e.summary === "Design review");
    expect(events.map((e) => e.start?.dateTime?.slice(0, 16))).toEqual(["2026-12-03T11:00"]);
    // A second retry replays: still one event.
    expect((await agent("calendar.create_event", event)).code).toBe(0);
    expect(google!.calendar.events().filter((e) => e.summary === "Design review")).toHaveLength(1);
  });

  it("refused: a crafted POST editing the thread id, and a recipient off the allowlist; nothing granted, nothing sent", async () => {
    const input = { to: ["ana@example.test"], subject: "Notes", body: "the notes", threadId: "thread-1" };
    const id = requestIdOf(await agent("gmail.send_message", input));
    await openEdit(id);
    const csrf = await page.locator('input[name="csrf"]').first().inputValue();
    const version = await page.locator('form.edit input[name="version"]').inputValue();
    const previewHash = await page.locator('form.edit input[name="previewHash"]').inputValue();
    const crafted = await page.request.post(`${desk.server.url}/approvals/${id}/edit`, {
      form: { csrf, version, previewHash, "f:/threadId": "thread-of-someone-else" },
    });
    expect(crafted.status()).toBe(400);
    expect(await crafted.text()).toContain("/threadId is not a field you may edit here");

    await page.locator('textarea[name="f:/to"]').fill('["eve@elsewhere.test"]');
    await page.getByRole("button", { name: "Check the edited call" }).click();
    await page.waitForLoadState();
    expect(await page.locator("main").innerText()).toMatch(/Edit refused[\s\S]*eve@elsewhere\.test|not allowed|allowlist/i);
    const request = await desk.project.request(id);
    expect([request.status, request["edit"]]).toEqual(["pending", undefined]);
    expect(google!.gmail.sent.filter((m) => m.subject === "Notes")).toEqual([]);
  });

  it("a grant for the edited input does not run for a caller sending the edited input; the original's retry runs it, once", async () => {
    const input = { to: ["ana@example.test", "wrong@example.test"], subject: "Budget", body: "numbers" };
    const edited = { ...input, to: ["ana@example.test"] };
    const id = requestIdOf(await agent("gmail.send_message", input));
    await openEdit(id);
    await page.locator('textarea[name="f:/to"]').fill(JSON.stringify(edited.to));
    await page.getByRole("button", { name: "Check the edited call" }).click();
    await page.waitForLoadState();
    await page.getByRole("button", { name: "Approve edited call" }).click();
    await page.waitForLoadState();

    // The edited input sent by a caller is another call: a new request, the grant untouched.
    const other = await agent("gmail.send_message", edited);
    expect(requestIdOf(other)).not.toBe(id);
    expect((await desk.project.request(id)).status).toBe("granted");
    expect(google!.gmail.sent.filter((m) => m.subject === "Budget")).toEqual([]);

    const retried = await agent("gmail.send_message", input);
    expect(retried.code, retried.stderr).toBe(0);
    expect(google!.gmail.sent.filter((m) => m.subject === "Budget").map((m) => m.to)).toEqual([["ana@example.test"]]);
    // The wrong recipient never received a copy of anything.
    expect(google!.gmail.sent.some((m) => m.to.includes("wrong@example.test"))).toBe(false);
  });

  it("two approvers: a page opened before the other's edit cannot approve it; reloaded, it approves the edited version, which runs once", async () => {
    const input = { to: ["ana@example.test", "wrong@example.test"], subject: "Offsite", body: "dates inside" };
    const id = requestIdOf(await agent("gmail.send_message", input, "--profile", "assistant-pair"));
    const { link } = await desk.project.addOperator("bob", "approver", desk.server.port);
    const bobContext = await desk.browser.newContext();
    const bob = await signIn(bobContext, link);
    const bobCard = bob.locator(`article[data-request-id="${id}"]`);
    await bobCard.waitFor({ timeout: 15_000 });
    // What bob's page names now, before ada's edit (the live queue would replace the card after it).
    const seen = {
      csrf: await bob.locator('input[name="csrf"]').first().inputValue(),
      ttl: "10",
      version: await bobCard.locator('input[name="version"]').inputValue(),
      previewHash: await bobCard.locator('input[name="previewHash"]').inputValue(),
    };
    expect(seen.version).toBe("0");

    await openEdit(id);
    await page.locator('textarea[name="f:/to"]').fill('["ana@example.test"]');
    await page.getByRole("button", { name: "Check the edited call" }).click();
    await page.waitForLoadState();
    await page.getByRole("button", { name: "Approve edited call" }).click();
    await page.waitForLoadState();
    expect(await page.locator("main").innerText()).toContain("needs a second, different approver");

    // Bob's page as he saw it: its Approve names version 0 and is refused.
    const stale = await bob.request.post(`${desk.server.url}/approvals/${id}/approve`, { form: seen });
    expect(stale.status()).toBe(409);
    expect(await stale.text()).toContain("changed since you looked");
    expect((await desk.project.request(id)).status).toBe("pending");

    // The open page learns of the edit without a reload (the live queue replaces the card) …
    await bob.locator(`article[data-request-id="${id}"][data-version="1"]`).waitFor({ timeout: 15_000 });
    // … and a reload shows the same.
    await bob.reload();
    const fresh = bob.locator(`article[data-request-id="${id}"]`);
    expect(await fresh.innerText()).toContain("Edited by");
    await fresh.getByRole("button", { name: "Approve" }).click();
    await bob.waitForLoadState();
    expect((await desk.project.request(id)).status).toBe("granted");
    await bobContext.close();

    const retried = await agent("gmail.send_message", input, "--profile", "assistant-pair");
    expect(retried.code, retried.stderr).toBe(0);
    expect(google!.gmail.sent.filter((m) => m.subject === "Offsite").map((m) => m.to)).toEqual([["ana@example.test"]]);
  });
});
