// The edit form, read strictly: a field the form did not offer, a stray member or JSON that does
// not parse is refused by name; a browser's CRLF line breaks are not a change; every value escaped.
import { describe, expect, it } from "vitest";
import { editFields, readEditForm, renderFields } from "./edit-form.js";
import { renderChanges } from "./preview.js";

const schema = {
  type: "object",
  properties: {
    to: { type: "array", items: { type: "string" } },
    subject: { type: "string" },
    body: { type: "string" },
    threadId: { type: "string" },
    cc: { type: "array", items: { type: "string" } },
  },
  required: ["to", "subject", "body"],
};
const asked = { to: ["ana@example.test", "wrong@example.test"], subject: "Plan", body: "line 1\nline 2", threadId: "t-1" };
const mailFields = () => editFields(["/to", "/cc", "/subject", "/body"], asked, schema);

describe("edit form fields", () => {
  it("one field per editable pointer: strings as text, the rest as JSON; members not editable shown read-only", () => {
    const fields = mailFields();
    expect(fields.map((f) => [f.pointer, f.kind, f.present])).toEqual([
      ["/to", "json", true],
      ["/cc", "json", false],
      ["/subject", "text", true],
      ["/body", "text", true],
    ]);
    const html = String(renderFields(fields, asked));
    expect(html).toContain('name="f:/body"');
    expect(html).not.toContain('name="f:/threadId"');
    expect(html).toMatch(/Not editable here:.*threadId.*t-1/s);
  });

  it('the whole input ("") is one field per member of the input and of the schema', () => {
    expect(editFields([""], asked, schema).map((f) => f.pointer)).toEqual(["/to", "/subject", "/body", "/threadId", "/cc"]);
    expect(editFields([""], "plain", { type: "string" }).map((f) => [f.pointer, f.kind])).toEqual([["", "text"]]);
  });

  it("every value is escaped inside its textarea, and a leading newline survives the parser", () => {
    const hostile = { ...asked, body: "\n</textarea><script>alert(1)</script>", subject: '"><img src=x onerror=alert(1)>' };
    const html = String(
      renderFields(
        mailFields().map((f) => ({ ...f, value: hostile[f.pointer.slice(1) as "body"] ?? f.value })),
        hostile,
      ),
    );
    expect(html).not.toContain("<script>");
    expect(html).not.toContain("</textarea><script>");
    expect(html).not.toContain("<img");
    expect(html).toContain('spellcheck="false">\n\n&lt;/textarea&gt;');
  });
});

describe("reading a posted edit form", () => {
  it("applies each field: JSON parsed, text as typed, the browser's CRLF not counted as a change", () => {
    const read = readEditForm(
      { csrf: "x", version: "0", previewHash: "h", "f:/to": '["ana@example.test"]', "f:/body": "line 1\r\nline 2", "f:/subject": "Plan B", "f:/cc": "" },
      mailFields(),
      asked,
    );
    expect(read).toEqual({ input: { ...asked, to: ["ana@example.test"], subject: "Plan B" } });
    // The input as asked is not changed in place.
    expect(asked.to).toHaveLength(2);
  });

  it("an empty JSON field removes a member; an absent text member left empty stays absent", () => {
    const fields = editFields(["/to", "/cc", "/note"], { to: ["a"], cc: ["b"] }, { type: "object", properties: { note: { type: "string" } } });
    expect(readEditForm({ "f:/cc": " ", "f:/note": "" }, fields, { to: ["a"], cc: ["b"] })).toEqual({ input: { to: ["a"] } });
    expect(readEditForm({ "f:/note": "hi" }, fields, { to: ["a"] })).toEqual({ input: { to: ["a"], note: "hi" } });
  });

  it("refuses a field the form did not offer (a non-editable pointer), by name, in any spelling", () => {
    for (const name of ["f:/threadId", "f:", "f:/to/0", "f:/To", "f:/to ", "f:/~1to"]) {
      const read = readEditForm({ [name]: "x" }, mailFields(), asked);
      expect(read).toEqual({ error: `${name.slice(2)} is not a field you may edit here` });
    }
  });

  it("refuses a stray form member, and a value that is not text", () => {
    expect(readEditForm({ input: "{}" }, mailFields(), asked)).toEqual({ error: "unexpected form member input" });
    expect(readEditForm({ "f:/body": ["a", "b"] }, mailFields(), asked)).toEqual({ error: "/body must be text" });
  });

  it("JSON that does not parse is refused naming the field", () => {
    const read = readEditForm({ "f:/to": "[ana@example.test" }, mailFields(), asked);
    expect("error" in read && read.error).toMatch(/^\/to is not JSON: /);
    expect(readEditForm({ "f:": " " }, editFields([""], 5, {}), 5)).toEqual({ error: "the whole input cannot be empty" });
  });
});

describe("the changes table", () => {
  it("lists items item by item, marking the removed and added ones, absent members named", () => {
    const html = String(
      renderChanges([
        { path: "/to", before: ["ana@example.test", "wrong@example.test"], after: ["ana@example.test"] },
        { path: "/cc", after: ["bo@example.test"] },
      ]),
    );
    expect(html).toContain('<li class="del"><span class="text">wrong@example.test</span></li>');
    expect(html).toContain('<li><span class="text">ana@example.test</span></li>');
    expect(html).toMatch(/data-path="\/cc".*absent.*bo@example\.test/s);
  });

  it("escapes both sides and shows hidden characters as markers", () => {
    const html = String(renderChanges([{ path: "/body<b>", before: "<script>alert(1)</script>", after: "pay \u202Eevil" }]));
    expect(html).not.toContain("<script>");
    expect(html).not.toContain("<b>");
    expect(html).toContain("⟨U+202E⟩");
    expect(html).not.toContain("\u202E");
  });
});
