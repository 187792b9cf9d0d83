/**
 * Outside review (issue 15): the protected-resource metadata (RFC 9728) must name the resource the
 * client actually reached. The server accepts `localhost:<port>` as well as `127.0.0.1:<port>`; a
 * client that connects by `localhost` must get metadata and a challenge about `localhost`, or (RFC
 * 9728 section 3.3) it has to reject the metadata as belonging to another resource.
 */
import type { Gate } from "@toolgate/core";
import { afterEach, describe, expect, it } from "vitest";
import { rawRequest } from "../fixtures/mcp-auth.js";
import { createNotesGate, profiles } from "../fixtures/notes-family.js";
import { serveMcp } from "./server.js";

const cleanup: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  await Promise.all(cleanup.splice(0).map((f) => f().catch(() => undefined)));
});

describe("review: protected-resource metadata by the name the client used", () => {
  it("a client reaching the server as localhost gets metadata and a challenge naming localhost", async () => {
    const gate = createNotesGate().gate as unknown as Gate;
    const server = await serveMcp(gate, { profiles, transport: { type: "http" } });
    cleanup.push(() => server.close());
    const port = server.url!.port;
    for (const host of ["127.0.0.1", "localhost"]) {
      const origin = `http://${host}:${port}`;
      const metadata = await rawRequest(`${origin}/.well-known/oauth-protected-resource/mcp`, { headers: { host: `${host}:${port}` } });
      expect(metadata.status, host).toBe(200);
      expect(JSON.parse(metadata.body).resource, host).toBe(`${origin}/mcp`);
      const challenge = await rawRequest(`${origin}/mcp`, {
        method: "POST",
        headers: { host: `${host}:${port}`, "content-type": "application/json" },
        body: "{}",
      });
      expect(challenge.status, host).toBe(401);
      expect(challenge.headers["www-authenticate"], host).toContain(`resource_metadata="${origin}/.well-known/oauth-protected-resource/mcp"`);
    }
  });
});
