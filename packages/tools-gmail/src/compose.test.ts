import { ToolError } from "@toolgate/core";
import PostalMime from "postal-mime";
import { describe, expect, it } from "vitest";
import { approvedRaw, buildRaw, composePreview, composeSchema, type ComposeFields } from "./compose.js";
import { resolveOptions } from "./options.js";

const config = resolveOptions({ from: "owner@example.test", attachments: true });
const schema = composeSchema(config, false);
const message = (fields: Partial<ComposeFields> = {}): ComposeFields =>
  schema.parse({ to: ["ana@example.test"], subject: "Lunch?", body: "At noon.", ...fields });
const headerSection = async (raw: string): Promise<string> => Buffer.from(raw, "base64url").toString("latin1").split("\r\n\r\n")[0]!;

describe("compose", () => {
  it("writes a long non-ASCII subject as RFC 2047 encoded words of at most 75 characters, read back exactly", async () => {
    const subject = "Überweisungsbestätigung für die Rechnung Nr. 4711 — bitte prüfen ☕ 日本語の件名も".repeat(3);
    const raw = await buildRaw(config, message({ subject }));
    const words = (await headerSection(raw)).match(/=\?[^?\s]+\?[BQbq]\?[^?\s]*\?=/g) ?? [];
    expect(words.length).toBeGreaterThan(3);
    for (const word of words) expect(word.length).toBeLessThanOrEqual(75);
    for (const line of (await headerSection(raw)).split("\r\n")) expect(line.length).toBeLessThanOrEqual(78);
    expect((await PostalMime.parse(Buffer.from(raw, "base64url"))).subject).toBe(subject);
    expect((await composePreview(config, message({ subject }))).details.subject).toBe(subject);
  });

  it("refuses an address whose local part is not a dot-atom (the composer would quote it), with the reason", () => {
    for (const to of [".a@example.test", "a..b@example.test", "a.@example.test"]) {
      const parsed = schema.safeParse({ to: [to], subject: "s", body: "b" });
      expect(parsed.error?.issues[0]).toMatchObject({ path: ["to", 0], message: "must not start or end its local part with a dot or hold two dots in a row" });
    }
    expect(schema.safeParse({ to: ["a.b@example.test"], subject: "s", body: "b" }).success).toBe(true);
  });

  it("previews a subject or file name as a reader sees it: text written as an encoded word is shown decoded", async () => {
    const hidden = `=?UTF-8?B?${Buffer.from("Invoice approved, pay now", "utf8").toString("base64")}?=`;
    const input = message({ subject: hidden, attachments: [{ filename: `${hidden}.pdf`, mimeType: "application/pdf", contentBase64: "JVBERg==" }] });
    const preview = await composePreview(config, input);
    const parsed = await PostalMime.parse(Buffer.from(await buildRaw(config, input), "base64url"));
    expect(preview.details.subject).toBe(parsed.subject);
    expect(preview.details.subject).toBe("Invoice approved, pay now");
    expect(preview.details.attachments.map((a) => a.filename)).toEqual(parsed.attachments.map((a) => a.filename));
  });

  it("refuses a message/* or multipart/* attachment, whose text a reader would take for part of the body", () => {
    for (const mimeType of ["message/rfc822", "Message/Partial", "multipart/mixed"]) {
      const attachments = [{ filename: "fwd.eml", mimeType, contentBase64: Buffer.from("To: mallory@evil.test\r\n\r\nhidden text").toString("base64") }];
      const parsed = schema.safeParse({ to: ["ana@example.test"], subject: "s", body: "b", attachments });
      expect(parsed.success).toBe(false);
      expect(parsed.error?.issues[0]?.path).toEqual(["attachments", 0, "mimeType"]);
    }
  });

  it("sends only the message whose facts were approved: another body, another recipient or no plan is a conflict", async () => {
    const approved = await composePreview(config, message());
    await expect(approvedRaw(config, message(), approved.plan)).resolves.toMatch(/^[A-Za-z0-9_-]+$/);
    for (const other of [message({ body: "At one." }), message({ to: ["bo@example.test"] }), message({ subject: "Lunch!" })]) {
      const refused = await approvedRaw(config, other, approved.plan).catch((e: unknown) => e);
      expect(ToolError.is(refused) && refused.code).toBe("conflict");
    }
    for (const plan of [undefined, null, {}, { factsSha256: "x" }]) {
      const refused = await approvedRaw(config, message(), plan).catch((e: unknown) => e);
      expect(ToolError.is(refused) && refused.code).toBe("conflict");
    }
  });

  it("builds the same preview each time (the approval binds its hash) while each send gets its own date, Message-ID and boundary", async () => {
    const input = message({ attachments: [{ filename: "a.pdf", mimeType: "application/pdf", contentBase64: "JVBERg==" }] });
    expect(await composePreview(config, input)).toEqual(await composePreview(config, input));
    const [a, b] = [await buildRaw(config, input), await buildRaw(config, input)].map((r) => Buffer.from(r, "base64url").toString("latin1"));
    expect(a!.match(/^Message-ID: (.+)$/m)?.[1]).not.toBe(b!.match(/^Message-ID: (.+)$/m)?.[1]);
    expect(a).toMatch(/^Date: .+ \+0000$/m);
  });
});
