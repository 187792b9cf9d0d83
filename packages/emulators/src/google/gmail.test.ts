import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { startGoogleEmulator, type GoogleEmulator } from "./google-emulator.js";
import { connect, rawMessage, SCOPE, statusOf } from "./fixtures/test-clients.js";

describe("google emulator: Gmail v1 through @googleapis/gmail", () => {
  let emulator: GoogleEmulator;
  beforeEach(async () => {
    emulator = await startGoogleEmulator({
      gmail: {
        address: "owner@example.test",
        labels: [{ id: "Label_9", name: "Receipts" }],
        messages: [
          { id: "m1", threadId: "t1", from: "Ana <ana@example.test>", subject: "Quarterly plan", body: "Draft of the plan.", date: "2025-03-01T10:00:00Z" },
          {
            id: "m2",
            threadId: "t1",
            from: "owner@example.test",
            to: "ana@example.test",
            subject: "Re: Quarterly plan",
            body: "Looks good.",
            date: "2025-03-02T10:00:00Z",
            labelIds: ["SENT"],
          },
          {
            id: "m3",
            from: "shop@example.test",
            subject: "Your receipt",
            body: "Total: 12.00",
            date: "2025-03-05T10:00:00Z",
            labelIds: ["INBOX", "Label_9"],
            attachments: [{ filename: "r.pdf", mimeType: "application/pdf", content: "%PDF" }],
          },
          { id: "m4", from: "spam@example.test", subject: "Win", body: "prize", date: "2025-03-06T10:00:00Z", labelIds: ["TRASH"] },
          { id: "m5", from: "Zoë <zoe@example.test>", subject: "Café ☕", body: "Grüße", html: "<p>Grüße</p>", date: "2025-03-07T10:00:00Z" },
        ],
      },
    });
  });
  afterEach(() => emulator.close());

  it("searches with from/to/subject/after/before/label/is:unread and pages", async () => {
    const { mail } = await connect(emulator, [SCOPE.gmailReadonly]);
    const ids = async (q: string): Promise<string[]> => ((await mail.users.messages.list({ userId: "me", q })).data.messages ?? []).map((m) => m.id ?? "");
    expect(await ids("from:ana@example.test")).toEqual(["m1"]);
    expect(await ids("to:ana@example.test")).toEqual(["m2"]);
    expect(await ids('subject:"quarterly plan"')).toEqual(["m2", "m1"]);
    expect(await ids("after:2025/03/02 before:2025/03/06")).toEqual(["m3", "m2"]);
    expect(await ids("label:receipts")).toEqual(["m3"]);
    expect(await ids("is:unread")).toEqual(["m5", "m1"]);
    expect(await ids("in:trash")).toEqual(["m4"]);
    expect(await ids("-from:ana plan")).toEqual(["m2"]);
    expect(await ids("has:attachment")).toEqual(["m3"]);
    const first = await mail.users.messages.list({ userId: "me", maxResults: 2 });
    expect(first.data.messages?.map((m) => m.id)).toEqual(["m5", "m3"]);
    const second = await mail.users.messages.list({ userId: "me", maxResults: 2, pageToken: first.data.nextPageToken ?? "" });
    expect(second.data.messages?.map((m) => m.id)).toEqual(["m2", "m1"]);
    expect(second.data.nextPageToken).toBeUndefined();
  });

  it("gets a message as full, metadata and raw, decoding encoded words and charsets", async () => {
    const { mail } = await connect(emulator, [SCOPE.gmailReadonly]);
    const full = (await mail.users.messages.get({ userId: "me", id: "m5", format: "full" })).data;
    expect(full.payload?.mimeType).toBe("multipart/alternative");
    const plain = full.payload?.parts?.find((p) => p.mimeType === "text/plain");
    expect(Buffer.from(plain?.body?.data ?? "", "base64url").toString("utf8")).toBe("Grüße");
    const meta = (await mail.users.messages.get({ userId: "me", id: "m5", format: "metadata", metadataHeaders: ["Subject"] })).data;
    expect(meta.payload?.headers).toEqual([{ name: "Subject", value: "Café ☕" }]);
    const raw = (await mail.users.messages.get({ userId: "me", id: "m3", format: "raw" })).data;
    expect(Buffer.from(raw.raw ?? "", "base64url").toString("utf8")).toContain("Subject: Your receipt");
    const withAttachment = (await mail.users.messages.get({ userId: "me", id: "m3" })).data;
    const attachment = withAttachment.payload?.parts?.find((p) => p.filename === "r.pdf");
    expect(attachment?.body?.attachmentId).toBeTruthy();
    await expect(mail.users.messages.get({ userId: "me", id: "nope" })).rejects.toSatisfy((e) => statusOf(e) === 404);
  });

  it("refuses q and full bodies under the metadata scope", async () => {
    const { mail } = await connect(emulator, [SCOPE.gmailMetadata]);
    await expect(mail.users.messages.list({ userId: "me", q: "from:ana" })).rejects.toSatisfy((e) => statusOf(e) === 403);
    await expect(mail.users.messages.get({ userId: "me", id: "m1", format: "full" })).rejects.toSatisfy((e) => statusOf(e) === 403);
    expect((await mail.users.messages.get({ userId: "me", id: "m1", format: "metadata" })).status).toBe(200);
  });

  it("sends RFC 2822 raw messages and records what was really sent", async () => {
    const { mail } = await connect(emulator, [SCOPE.gmailSend]);
    const sent = await mail.users.messages.send({
      userId: "me",
      requestBody: {
        raw: rawMessage({ To: "Ana <ana@example.test>", Cc: "bo@example.test", Bcc: "cy@example.test", Subject: "=?UTF-8?B?w4lsYW4=?=" }, "Hello there"),
      },
    });
    expect(sent.data.labelIds).toEqual(["SENT"]);
    expect(emulator.gmail.sent).toHaveLength(1);
    expect(emulator.gmail.sent[0]).toMatchObject({
      to: ["ana@example.test"],
      cc: ["bo@example.test"],
      bcc: ["cy@example.test"],
      subject: "Élan",
      // As mail software reads it (postal-mime): the unterminated last line is a line.
      text: "Hello there\n",
    });
    await expect(mail.users.messages.send({ userId: "me", requestBody: { raw: rawMessage({ Subject: "nobody" }, "x") } })).rejects.toSatisfy(
      (e) => statusOf(e) === 400,
    );
    await expect(mail.users.messages.send({ userId: "me", requestBody: {} })).rejects.toSatisfy((e) => statusOf(e) === 400);
    expect(emulator.gmail.sent).toHaveLength(1);
  });

  it("delivers to every address of every To, Cc and Bcc header, as mail software reads them", async () => {
    const { mail } = await connect(emulator, [SCOPE.gmailSend]);
    const send = async (head: string): Promise<readonly string[]> => {
      const raw = Buffer.from(`${head}\r\nSubject: x\r\n\r\nbody`, "utf8").toString("base64url");
      await mail.users.messages.send({ userId: "me", requestBody: { raw } });
      const last = emulator.gmail.sent.at(-1)!;
      return [...last.to, ...last.cc.map((a) => `cc:${a}`), ...last.bcc.map((a) => `bcc:${a}`)];
    };
    const word = (text: string): string => `=?UTF-8?B?${Buffer.from(text, "utf8").toString("base64")}?=`;
    expect(await send('To: ana@example.test, "mallory"@evil.test')).toEqual(["ana@example.test", "mallory@evil.test"]);
    expect(await send("To: ana@example.test\r\nTo: mallory@evil.test")).toEqual(["ana@example.test", "mallory@evil.test"]);
    expect(await send("to: ana@example.test\r\nCC: bo@example.test\r\ncc: mallory@evil.test\r\nBCC: cy@example.test")).toEqual([
      "ana@example.test",
      "cc:bo@example.test",
      "cc:mallory@evil.test",
      "bcc:cy@example.test",
    ]);
    expect(await send("To: friends: ana@example.test, mallory@evil.test;")).toEqual(["ana@example.test", "mallory@evil.test"]);
    expect(await send("To: ana@example.test,\r\n mallory@evil.test")).toEqual(["ana@example.test", "mallory@evil.test"]);
    expect(await send('To: "ana@example.test" <mallory@evil.test>')).toEqual(["mallory@evil.test"]);
    expect(await send('To: "ana@example.test, x"@evil.test')).toEqual(["ana@example.test, x@evil.test"]);
    // An encoded word that decodes to an angle address is an address to mail software.
    expect(await send(`To: ${word("<mallory@evil.test>")}`)).toEqual(["mallory@evil.test"]);
  });

  it("creates, lists, gets and sends drafts", async () => {
    const { mail } = await connect(emulator, [SCOPE.gmailCompose]);
    const draft = await mail.users.drafts.create({
      userId: "me",
      requestBody: { message: { raw: rawMessage({ To: "ana@example.test", Subject: "Draft" }, "Not yet") } },
    });
    const id = draft.data.id ?? "";
    expect((await mail.users.drafts.list({ userId: "me" })).data.drafts?.map((d) => d.id)).toEqual([id]);
    const got = await mail.users.drafts.get({ userId: "me", id, format: "full" });
    expect(got.data.message?.labelIds).toEqual(["DRAFT"]);
    const sent = await mail.users.drafts.send({ userId: "me", requestBody: { id } });
    expect(sent.data.labelIds).toEqual(["SENT"]);
    expect(emulator.gmail.sent.map((m) => [m.subject, m.viaDraft])).toEqual([["Draft", true]]);
    expect(emulator.gmail.draftIds()).toEqual([]);
    await expect(mail.users.drafts.send({ userId: "me", requestBody: { id } })).rejects.toSatisfy((e) => statusOf(e) === 404);
  });

  it("gets threads, lists and creates labels, modifies labels and trashes", async () => {
    const { mail } = await connect(emulator, [SCOPE.gmailModify]);
    const thread = await mail.users.threads.get({ userId: "me", id: "t1", format: "metadata" });
    expect(thread.data.messages?.map((m) => m.id)).toEqual(["m1", "m2"]);
    const labels = await mail.users.labels.list({ userId: "me" });
    expect(labels.data.labels?.some((l) => l.name === "Receipts" && l.type === "user")).toBe(true);
    const created = await mail.users.labels.create({ userId: "me", requestBody: { name: "Follow up" } });
    expect(created.data.id).toMatch(/^Label_/);
    await expect(mail.users.labels.create({ userId: "me", requestBody: { name: "follow-up" } })).rejects.toSatisfy((e) => statusOf(e) === 409);
    const modified = await mail.users.messages.modify({
      userId: "me",
      id: "m1",
      requestBody: { addLabelIds: [created.data.id ?? ""], removeLabelIds: ["UNREAD"] },
    });
    expect(modified.data.labelIds?.sort()).toEqual(["INBOX", created.data.id].sort());
    await expect(mail.users.messages.modify({ userId: "me", id: "m1", requestBody: { addLabelIds: ["Label_404"] } })).rejects.toSatisfy(
      (e) => statusOf(e) === 400,
    );
    const trashed = await mail.users.messages.trash({ userId: "me", id: "m1" });
    expect(trashed.data.labelIds).toContain("TRASH");
    expect(emulator.gmail.labelIdsOf("m1")).not.toContain("INBOX");
  });

  it("refuses another user's mailbox", async () => {
    const { mail } = await connect(emulator, [SCOPE.gmailReadonly]);
    await expect(mail.users.labels.list({ userId: "someone-else@example.test" })).rejects.toSatisfy((e) => statusOf(e) === 403);
  });
});
