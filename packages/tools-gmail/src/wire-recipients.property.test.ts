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
const name = fc.constantFrom("Ana", "Ana, Finance", "mallory@evil.test", "ana@example.test", "Bö", "<mallory@evil.test>", "x (y)", "a;b", "friends:");
const piece: fc.Arbitrary<string> = fc.oneof(
  address,
  address.map((a) => `<${a}>`),
  fc.tuple(name, address).map(([n, a]) => `"${n.replace(/["\\]/g, "")}" <${a}>`),
  fc.tuple(name, address).map(([n, a]) => `${word(n)} <${a}>`),
  fc.tuple(name, address).map(([n, a]) => `${n} <${a}>`),
  fc.tuple(address, name).map(([a, n]) => `${a} (${n.replace(/[()\\]/g, "")})`),
  address.map((a) => `"${a.split("@")[0]}"@${a.split("@")[1]}`),
  fc.tuple(name, address).map(([n, a]) => `"${n.replace(/["\\]/g, "")}"@${a.split("@")[1]}`),
  name.map((n) => word(n)),
  fc.array(address, { minLength: 1, maxLength: 2 }).map((list) => `friends: ${list.join(", ")};`),
  fc.tuple(name, address).map(([n, a]) => `"${n} <${a}>`),
  fc.tuple(name, address).map(([n, a]) => `${n} <${a}`),
  fc.tuple(name, address).map(([n, a]) => `"${n}\\" <${a}>`),
  address.map((a) => `<@relay.test:${a}>`),
  fc.constantFrom("undisclosed-recipients:;", "mallory", "<>", '""', "()"),
);
const separator = fc.constantFrom(", ", ",", "; ", " ", ",\r\n ", "\r\n\t", " , ");
const header = fc
  .tuple(fc.constantFrom("To", "to", "Cc", "CC", "Bcc", "bcc"), fc.array(fc.tuple(piece, separator), { minLength: 1, maxLength: 3 }))
  .map(([field, parts]) => `${field}: ${parts.map(([p, s], i) => (i === 0 ? p : `${s}${p}`)).join("")}`);

describe("gmail.send_draft against the emulator, property", () => {
  const harness = freshHarness();

  it("refuses, or previews exactly the delivered recipients", async () => {
    const send = sendDraftThrough(harness());
    let refused = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(header, { minLength: 1, maxLength: 3 }), async (headers) => {
        const outcome = await send(draftRaw(headers.join("\r\n")));
        if (outcome.previewed === undefined) {
          refused++;
          expect(outcome.first.status === "error" && outcome.first.code).toMatch(/^(preview_invalid|provider_rejected)$/);
          expect(harness().emulator.gmail.sent).toHaveLength(0);
          return;
        }
        expect(outcome.result?.status).toBe("ok");
        expect(outcome.delivered).toEqual(outcome.previewed);
      }),
      { seed: 14_006, numRuns: 150 },
    );
    // The generator reaches both sides: some drafts are refused, some are sent.
    expect(refused).toBeGreaterThan(10);
    expect(refused).toBeLessThan(140);
  });
});
