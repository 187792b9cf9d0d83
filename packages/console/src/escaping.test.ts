// Whatever a tool puts in its preview (or a caller in its principal, tenant or input) reaches the
// page as text: no markup, no script, no link, no attribute break-out, no hidden characters.
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { pendingRequest, person, signedIn, type Person } from "./fixtures/browser.js";
import { call, openDesk, type Desk } from "./fixtures/desk.js";
import { CSP } from "./security.js";

let desk: Desk;
let alice: Person;
beforeEach(async () => {
  desk = await openDesk();
  alice = await signedIn(desk, "alice", "admin");
});
afterEach(() => desk.close());

const HOSTILE = [
  "<script>alert(1)</script>",
  `"><img src=x onerror=alert(2)>`,
  `'><svg onload=alert(3)>`,
  "javascript:alert(4)",
  "</textarea></pre><iframe src=//evil.test>",
  "&lt;b&gt;already escaped&lt;/b&gt;",
  "{{constructor.constructor('alert(5)')()}}",
];

/** The page's markup outside text: every tag the page has, with its attributes. */
const tags = (page: string) => [...page.matchAll(/<([a-zA-Z][a-zA-Z0-9-]*)\b([^>]*)>/g)].map((m) => ({ name: m[1]!.toLowerCase(), attrs: m[2]! }));

function assertInert(page: string) {
  const all = tags(page);
  // One script, ours, from /static; no inline handler, no javascript: URL, no frame, image or svg.
  expect(all.filter((t) => t.name === "script").map((t) => t.attrs.trim())).toEqual(['src="/static/console.js" defer']);
  expect(all.filter((t) => /\son[a-z]+\s*=/i.test(t.attrs))).toEqual([]);
  expect(all.filter((t) => /javascript:/i.test(t.attrs))).toEqual([]);
  expect(
    all.filter(
      (t) =>
        ["img", "svg", "iframe", "textarea", "object", "embed", "base", "meta"].includes(t.name) &&
        !t.attrs.includes("charset") &&
        !t.attrs.includes("viewport"),
    ),
  ).toEqual([]);
  expect(page).not.toMatch(/<a [^>]*href="(?!\/)/); // the console links only to its own paths
}

describe("a hostile preview", () => {
  it("every field is shown as text, escaped, in summary, target, details, recipients and body", async () => {
    const id = await pendingRequest(desk, { to: HOSTILE, subject: HOSTILE[0]!, body: HOSTILE.join("\n"), link: "javascript:alert(6)" });
    const page = await (await alice.get("/approvals")).text();
    assertInert(page);
    expect(page).toContain(`data-request-id="${id}"`);
    expect(page).toContain("&lt;script&gt;alert(1)&lt;/script&gt;");
    expect(page).toContain("&quot;&gt;&lt;img src=x onerror=alert(2)&gt;");
    expect(page).toContain("&#39;&gt;&lt;svg onload=alert(3)&gt;");
    expect(page).toContain("&amp;lt;b&amp;gt;already escaped"); // escaped once more, shown as typed
    expect(page).toContain('<span class="text">javascript:alert(6)</span>');
    // Every recipient, each in its own list item.
    expect((page.match(/<li>/g) ?? []).length).toBeGreaterThanOrEqual(HOSTILE.length);
    expect(page).toContain("7 recipients, every one listed below");
  });

  it("a hostile principal, tenant, tool-chosen key or call reference cannot break out of attributes or text", async () => {
    const result = await desk.gate.invoke("desk.send_memo", { to: ["a@example.test"], subject: "s", body: "b" }, {
      ...call,
      principal: `p"><script>alert(7)</script>`,
      tenant: `t' onmouseover='alert(8)`,
      callRef: `"><b>ref</b>`,
    } as never);
    expect(result.status).toBe("approval_required");
    const page = await (await alice.get("/approvals")).text();
    assertInert(page);
    expect(page).toContain("p&quot;&gt;&lt;script&gt;alert(7)&lt;/script&gt;");
    expect(page).toContain("t&#39; onmouseover=&#39;alert(8)");
    expect(page).not.toContain("<b>ref</b>");
  });

  it("hidden characters (bidi overrides, zero-width) are shown as visible markers, not applied", async () => {
    await pendingRequest(desk, { to: ["ops@example.test\u202Etset.live"], subject: "pay\u200Bment", body: "line\u2066one\u2069" });
    const page = await (await alice.get("/approvals")).text();
    expect(page).not.toMatch(/[\u202E\u200B\u2066\u2069]/);
    expect(page).toContain("⟨U+202E⟩");
    expect(page).toContain("⟨U+200B⟩");
    expect(page).toContain("⟨U+2066⟩");
  });

  it("a details object shaped like the template helper's own markup is data, not markup", async () => {
    // The preview's details are plain JSON from the tool: an object with isEscaped/toString keys prints as JSON.
    const { renderValue } = await import("./preview.js");
    const shown = String(renderValue({ isEscaped: true, toString: "<script>alert(9)</script>", callbacks: [1] }));
    expect(shown).not.toContain("<script>");
    expect(shown).toContain("&lt;script&gt;alert(9)&lt;/script&gt;");
  });
});

describe("the sign-in page", () => {
  it("puts only a token of the right shape in its form; anything else gets the plain page", async () => {
    const visitor = person(desk);
    for (const token of [`"><script>alert(1)</script>`, "tgl_short", `tgl_${"a".repeat(43)}" autofocus onfocus="alert(1)`]) {
      const page = await (await visitor.get(`/login?token=${encodeURIComponent(token)}`)).text();
      assertInert(page);
      expect(page).not.toContain('name="token"');
      expect(page).not.toContain("alert(1)");
    }
  });
});

describe("what the human sees", () => {
  it("a repository write's body is shown as a diff, line by line", async () => {
    await pendingRequest(desk, { path: "src/app.ts", before: "const x = 1;", after: "const x = <b>2</b>;" }, "desk.write_note");
    const page = await (await alice.get("/approvals")).text();
    expect(page).toContain('<pre class="diff">');
    expect(page).toContain('<span class="del">-const x = 1;</span>');
    expect(page).toContain('<span class="add">+const x = &lt;b&gt;2&lt;/b&gt;;</span>');
    expect(page).toContain('<span class="hunk">@@ -1 +1 @@</span>');
    expect(page).toContain("Target: <strong>src/app.ts</strong>");
  });

  it("every recipient of a long list is on the page", async () => {
    const to = Array.from({ length: 60 }, (_, i) => `person${i}@example.test`);
    await pendingRequest(desk, { to, subject: "all hands", body: "hello" });
    const page = await (await alice.get("/approvals")).text();
    for (const address of to) expect(page).toContain(`<span class="text">${address}</span>`);
    expect(page).toContain("60 recipients, every one listed below");
  });
});

describe("headers", () => {
  it("every response carries the strict CSP, nosniff and no-referrer: pages, refusals, redirects, static files", async () => {
    expect(CSP).toBe(
      "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    );
    const responses = [
      await alice.get("/approvals"),
      await alice.get("/audit"),
      await alice.get("/nowhere"),
      await alice.post("/switches/disable", { target: "x" }),
      await alice.get("/approvals", { host: "evil.test" }),
      await alice.get("/static/console.js"),
      await alice.get("/static/console.css"),
      await desk.app.request("/approvals", { headers: { host: "127.0.0.1:7878" } }),
    ];
    for (const r of responses) {
      expect(r.headers.get("content-security-policy")).toBe(CSP);
      expect(r.headers.get("x-content-type-options")).toBe("nosniff");
      expect(r.headers.get("referrer-policy")).toBe("no-referrer");
    }
    expect(responses[5]!.headers.get("content-type")).toMatch(/^text\/javascript/);
    expect(responses[6]!.headers.get("content-type")).toMatch(/^text\/css/);
  });

  it("no page carries inline script or style", async () => {
    await pendingRequest(desk, { to: ["a@example.test"], subject: "s", body: "b" });
    for (const path of ["/approvals", "/inventory", "/audit", "/outbox", "/switches", "/operators", "/login"]) {
      const page = await (await alice.get(path)).text();
      expect([path, /<script(?![^>]*\bsrc=)/.test(page), /<style|\sstyle=/.test(page)]).toEqual([path, false, false]);
    }
  });
});
