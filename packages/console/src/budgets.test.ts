// The Budgets page: what each limit counts now, per scope, from the journal every worker shares;
// every role may see it; a caller's principal reaches the page as escaped, visible text.
import { createToolRegistry, defineProfile } from "@toolgate/core";
import { buildInventory } from "@toolgate/core/operator";
import { afterEach, describe, expect, it } from "vitest";
import { person, signedIn } from "./fixtures/browser.js";
import { deskFamily, openDesk, type Desk } from "./fixtures/desk.js";

const metered = defineProfile({
  name: "metered",
  allow: ["desk:read"],
  maxRisk: "low",
  limits: [
    { name: "counts", tools: ["desk.count_words"], per: "principal", max: 2, windowMs: 60_000 },
    { tools: ["desk.*"], per: "tenant", max: 100, windowMs: 3_600_000 },
    { tools: ["desk.*"], maxConcurrent: 1 },
  ],
});
const inventory = buildInventory(createToolRegistry({ families: [deskFamily({ memos: [], counts: [] })] }), { profiles: [metered] });
const as = (principal: string) => ({ principal, tenant: "tenant-a", profile: metered });

const desks: Desk[] = [];
afterEach(async () => {
  for (const d of desks.splice(0)) await d.close();
});
async function desk(): Promise<Desk> {
  const d = await openDesk({ sqlite: true, console: { inventory } });
  desks.push(d);
  return d;
}

/** The rows of the budgets table, as cell texts. */
function rowsOf(page: string): string[][] {
  const body = /<table class="budgets">[\s\S]*?<tbody>([\s\S]*?)<\/tbody>/.exec(page)?.[1] ?? "";
  return [...body.matchAll(/<tr>([\s\S]*?)<\/tr>/g)].map((r) => [...r[1]!.matchAll(/<td>([\s\S]*?)<\/td>/g)].map((c) => c[1]!.replace(/<[^>]+>/g, "")));
}

describe("budgets page", () => {
  it("is for signed-in operators only: a visitor is sent to sign in", async () => {
    const d = await desk();
    const response = await person(d).get("/budgets");
    expect(response.status).toBe(303);
    expect(response.headers.get("location")).toBe("/login");
  });

  it("shows a viewer the declared limits before any call, and the per-worker ones", async () => {
    const d = await desk();
    const viewer = await signedIn(d, "vera", "viewer");
    const response = await viewer.get("/budgets");
    expect(response.status).toBe(200);
    const page = await response.text();
    expect(page).toContain('<a href="/budgets" aria-current="page">Budgets</a>');
    expect(page).toContain("No calls counted against any limit now.");
    expect(page).toContain("<code>metered / counts</code>: 2 per principal every 1 min");
    expect(page).toContain("<code>metered / desk.*/concurrent</code>: at most 1 at once per tool");
    const listed = await (await viewer.get("/inventory")).text();
    expect(listed).toContain('<ul class="limits"><li><code>metered</code>: 2 per principal every 1 min</li>');
  });

  it("counts the calls of both workers per principal and tenant, says when the next fits, and forgets them once the window slides past", async () => {
    const d = await desk();
    const other = await d.worker();
    try {
      expect((await d.gate.invoke("desk.count_words", { text: "one" }, as("agent-1"))).status).toBe("ok");
      expect((await other.gate.invoke("desk.count_words", { text: "two" }, as("agent-1"))).status).toBe("ok");
      const refused = await d.gate.invoke("desk.count_words", { text: "three" }, as("agent-1"));
      expect(refused).toMatchObject({ status: "denied", code: "rate_limited" });
      expect((await other.gate.invoke("desk.count_words", { text: "four" }, as("agent-2"))).status).toBe("ok");
    } finally {
      await other.close();
    }
    const viewer = await signedIn(d, "vera", "viewer");
    const page = await (await viewer.get("/budgets")).text();
    const rows = rowsOf(page);
    expect(rows.map((r) => r.slice(0, 5))).toEqual([
      ["metered / counts", "principal", "tenant-a", "agent-1", "2 of 2"],
      ["metered / counts", "principal", "tenant-a", "agent-2", "1 of 2"],
      ["metered / desk.*/tenant/3600000", "tenant", "tenant-a", "-", "3 of 100"],
    ]);
    expect(rows[0]![6]).toMatch(/^\d+(\.\d)? s$/);
    expect(rows[1]![6]).toBe("now");
    expect(page).not.toContain("Nothing counted now");

    d.advance(62_000);
    const later = rowsOf(await (await viewer.get("/budgets")).text());
    expect(later.map((r) => r[0])).toEqual(["metered / desk.*/tenant/3600000"]);
  });

  it("a limit record the journal cannot vouch for is a plain error page (500), never a crash or a guess", async () => {
    const d = await desk();
    await d.journal.updateRecord("limit", "f".repeat(64), () => ({ value: { v: 1, profile: "metered" }, event: { type: "x", at: "t", data: {} }, result: 0 }));
    const response = await (await signedIn(d, "vera", "viewer")).get("/budgets");
    expect(response.status).toBe(500);
    expect(await response.text()).toContain("(journal_failed)");
  });

  it("shows a principal as escaped text with its hidden characters marked", async () => {
    const d = await desk();
    const hostile = '<img src=x onerror="alert(1)">\u202Eevil';
    expect((await d.gate.invoke("desk.count_words", { text: "x" }, as(hostile))).status).toBe("ok");
    const page = await (await (await signedIn(d, "vera", "viewer")).get("/budgets")).text();
    expect(page).not.toContain("<img");
    expect(page).toContain("&lt;img src=x onerror=&quot;alert(1)&quot;&gt;");
    expect(page).toContain("⟨U+202E⟩");
  });
});
