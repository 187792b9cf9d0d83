import { describe, expect, it } from "vitest";
import { parseMessage } from "./mime.js";

const crlf = (lines: readonly string[]): Buffer => Buffer.from(lines.join("\r\n"), "utf8");

describe("the Gmail emulator reads a message as mail software does (postal-mime)", () => {
  it("sees an attachment named only by an RFC 2231 parameter, and a quoted name holding a semicolon", async () => {
    const parsed = await parseMessage(
      crlf([
        "To: ana@example.test",
        "Subject: files",
        'Content-Type: multipart/mixed; boundary="b;1"',
        "",
        "--b;1",
        "Content-Type: text/plain",
        "",
        "see attached",
        "--b;1",
        "Content-Type: application/pdf",
        "Content-Disposition: attachment; filename*=utf-8''r%C3%A9sum%C3%A9.pdf",
        "Content-Transfer-Encoding: base64",
        "",
        "JVBERg==",
        "--b;1",
        'Content-Type: text/csv; name="a;b.csv"',
        "Content-Disposition: attachment",
        "",
        "x,y",
        "--b;1--",
        "",
      ]),
    );
    expect(parsed.attachments.map((a) => [a.filename, a.mimeType])).toEqual([
      ["résumé.pdf", "application/pdf"],
      ["a;b.csv", "text/csv"],
    ]);
    expect(parsed.attachments[0]?.size).toBe(4);
    expect(parsed.parts.map((p) => [p.mimeType, p.filename])).toEqual([
      ["text/plain", ""],
      ["application/pdf", "résumé.pdf"],
      ["text/csv", "a;b.csv"],
    ]);
    expect(parsed.text.trim()).toBe("see attached");
  });

  it("decodes text in the charset it declares, and a subject split over encoded words in two charsets", async () => {
    const parsed = await parseMessage(
      Buffer.concat([
        crlf(["To: ana@example.test", "Subject: =?ISO-8859-1?Q?Caf=E9?=", " =?UTF-8?B?IOKYlQ==?=", "Content-Type: text/plain; charset=ISO-8859-1", "", ""]),
        Buffer.from([0x63, 0x61, 0x66, 0xe9]),
      ]),
    );
    expect(parsed.subject).toBe("Café ☕");
    expect(parsed.text.trimEnd()).toBe("café");
  });

  it("delivers to every address of every To, Cc and Bcc header, groups flattened, and keeps the part tree for format=full", async () => {
    const parsed = await parseMessage(
      crlf([
        "To: Ana <ANA@example.test>, friends: bo@example.test, cy@example.test;",
        "to: dee@example.test",
        "Cc: (comment) eve@example.test",
        "Bcc: fay@example.test",
        'Content-Type: multipart/mixed; boundary="outer"',
        "",
        "--outer",
        'Content-Type: multipart/alternative; boundary="inner"',
        "",
        "--inner",
        "Content-Type: text/plain; charset=UTF-8",
        "Content-Transfer-Encoding: quoted-printable",
        "",
        "Gr=C3=BC=C3=9Fe",
        "--inner",
        "Content-Type: text/html; charset=UTF-8",
        "",
        "<p>Grüße</p>",
        "--inner--",
        "--outer--",
        "",
      ]),
    );
    expect([parsed.to, parsed.cc, parsed.bcc]).toEqual([
      ["ana@example.test", "bo@example.test", "cy@example.test", "dee@example.test"],
      ["eve@example.test"],
      ["fay@example.test"],
    ]);
    expect(parsed.mimeType).toBe("multipart/mixed");
    const alternative = parsed.parts[0]!;
    expect(alternative.parts.map((p) => [p.mimeType, p.body.toString("utf8").trim()])).toEqual([
      ["text/plain", "Grüße"],
      ["text/html", "<p>Grüße</p>"],
    ]);
    expect(alternative.parts[0]!.headers).toContainEqual(["Content-Transfer-Encoding", "quoted-printable"]);
  });

  it("rejects a structure nested past the bound rather than reading part of it", async () => {
    let body = "Content-Type: text/plain\r\n\r\nhidden\r\n";
    for (let i = 0; i < 70; i++) body = `Content-Type: multipart/mixed; boundary="n${i}"\r\n\r\n--n${i}\r\n${body}--n${i}--\r\n`;
    await expect(parseMessage(Buffer.from(`To: ana@example.test\r\n${body}`, "latin1"))).rejects.toThrow(/nesting/i);
  });
});
