/**
 * Differential property: for address headers built from the pieces attackers use (quoted strings,
 * comments, groups, encoded words, folding, separators, several headers), `gmail.send_draft`
 * either refuses the draft with a typed error and nothing is sent, or what it previews is exactly
 * what the emulator (another maintained parser, postal-mime's) delivers to.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { draftRaw, freshHarness, sendDraftThrough } from "./fixtures/drafts.js";

const word = (text: string): string => `=?UTF-8?B?${Buffer.from(text, "utf8").toString("base64")}?=`;
const address = fc.constantFrom("ana@example.test", "bo@example.test", "mallory@evil.test", "MALLORY@Evil.Test");
const plainName = fc.constantFrom("Ana", "Ana, Finance", "Bö Müller", "x (y)", "a;b", "friends:", "O'Brien");
const name = fc.oneof(plainName, fc.constantFrom("mallory@evil.test", "ana@example.test", "<mallory@evil.test>"));
const unquoted = (n: string): string => n.replace(/["\\]/g, "");
/** What mail clients write: mostly readable forms, so the property sees many sends. */
const ordinary: fc.Arbitrary<string> = fc.oneof(
  address,
  address.map((a) => `<${a}>`),
  fc.tuple(plainName, address).map(([n, a]) => `"${unquoted(n)}" <${a}>`),
  fc.tuple(plainName, address).map(([n, a]) => `${word(n)} <${a}>`),
  fc.tuple(address, plainName).map(([a, n]) => `${a} (${n.replace(/[()\\]/g, "")})`),
  address.map((a) => `"${a.split("@")[0]}"@${a.split("@")[1]}`),
  fc.array(address, { minLength: 1, maxLength: 2 }).map((list) => `friends: ${list.join(", ")};`),
  fc.constantFrom("undisclosed-recipients:;"),
);
/** What an attacker writes to make two readers disagree. */
const hostile: fc.Arbitrary<string> = fc.oneof(
  fc.tuple(name, address).map(([n, a]) => `"${unquoted(n)}" <${a}>`),
  fc.tuple(name, address).map(([n, a]) => `${word(n)} <${a}>`),
  fc.tuple(name, address).map(([n, a]) => `${n} <${a}>`),
  fc.tuple(address, name).map(([a, n]) => `${a} (${n.replace(/[()\\]/g, "")})`),
  fc.tuple(name, address).map(([n, a]) => `"${unquoted(n)}"@${a.split("@")[1]}`),
  name.map((n) => word(n)),
  fc.tuple(name, address).map(([n, a]) => `"${n} <${a}>`),
  fc.tuple(name, address).map(([n, a]) => `${n} <${a}`),
  fc.tuple(name, address).map(([n, a]) => `"${n}\\" <${a}>`),
  address.map((a) => `<@relay.test:${a}>`),
  fc.constantFrom("mallory", "<>", '""', "()"),
);
const piece = fc.oneof({ arbitrary: ordinary, weight: 6 }, { arbitrary: hostile, weight: 1 });
const separator = fc.oneof(
  { arbitrary: fc.constantFrom(", ", ",", "; ", ",\r\n "), weight: 6 },
  { arbitrary: fc.constantFrom(" ", "\r\n\t", " , "), weight: 1 },
);
const header = (field: fc.Arbitrary<string>) =>
  fc
    .tuple(field, fc.array(fc.tuple(piece, separator), { minLength: 1, maxLength: 3 }))
    .map(([f, parts]) => `${f}: ${parts.map(([p, sep], i) => (i === 0 ? p : `${sep}${p}`)).join("")}`);
/** One To, and maybe a Cc and a Bcc, in any letter case; sometimes a second To. */
const headers = fc
  .tuple(
    header(fc.constantFrom("To", "to", "TO")),
    fc.option(header(fc.constantFrom("Cc", "CC", "cc"))),
    fc.option(header(fc.constantFrom("Bcc", "BCC", "bcc"))),
    fc.oneof({ arbitrary: fc.constant(null), weight: 9 }, { arbitrary: header(fc.constantFrom("To", "to")), weight: 1 }),
  )
  .map((list) => list.filter((h): h is string => h !== null));

describe("gmail.send_draft against the emulator, property", () => {
  const harness = freshHarness();

  it("refuses, or previews exactly the delivered recipients", async () => {
    const send = sendDraftThrough(harness());
    let refused = 0;
    await fc.assert(
      fc.asyncProperty(headers, async (list) => {
        const outcome = await send(draftRaw(list.join("\r\n")));
        if (outcome.previewed === undefined) {
          refused++;
          expect(outcome.first.status === "error" && outcome.first.code).toMatch(/^(preview_invalid|provider_rejected)$/);
          expect(harness().emulator.gmail.sent).toHaveLength(0);
          return;
        }
        expect(outcome.result?.status).toBe("ok");
        expect(outcome.delivered).toEqual(outcome.previewed);
      }),
      { seed: 14_006, numRuns: 120 },
    );
    // The generator reaches both sides: some drafts are refused, some are sent.
    expect(refused).toBeGreaterThan(12);
    expect(refused).toBeLessThan(108);
  }, 120_000);
});
