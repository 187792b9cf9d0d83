import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import type { BlockObjectResponse, PageObjectResponse } from "@notionhq/client";
import { normalizeId } from "./convert.js";
import { FaultList, type NotionFault } from "./faults.js";
import { createRequestHandler, type NotionRequestRecord } from "./handle-request.js";
import { issueAuthorizationCode } from "./oauth-token.js";
import { notionRoutes } from "./routes/notion-routes.js";
import type { DatabaseSeed, IntegrationSeed, NotionCapability, NotionIntegration, PageSeed } from "./world-model.js";
import { NotionWorld } from "./world.js";

/** What the emulator starts with. */
export interface NotionSeed {
  readonly integrations?: readonly IntegrationSeed[];
  readonly databases?: readonly DatabaseSeed[];
  readonly pages?: readonly PageSeed[];
}

export interface NotionEmulatorOptions {
  /** Port on 127.0.0.1; default an ephemeral one. */
  readonly port?: number;
  readonly seed?: NotionSeed;
  /** Milliseconds since the epoch, for timestamps; default `Date.now`. */
  readonly clock?: () => number;
  /** Wait this long before handling each request (a client that gives up first changes nothing). */
  readonly latencyMs?: number;
}

/** A running Notion emulator. */
export interface NotionEmulator {
  /** `http://127.0.0.1:<port>`: pass as `baseUrl` to `new Client({ auth, baseUrl })`. */
  readonly url: string;
  /** The OAuth consent page (`/v1/oauth/authorize`): PKCE S256, loopback redirects, Allow or Deny. */
  readonly authorizeUrl: string;
  readonly port: number;
  /** The state, in the client's own response shapes. */
  readonly world: NotionWorld;
  /** Every request seen, oldest first. */
  readonly requests: readonly NotionRequestRecord[];
  addIntegration(seed: IntegrationSeed): NotionIntegration;
  seedDatabase(seed: DatabaseSeed): { databaseId: string; dataSourceId: string };
  seedPage(seed: PageSeed): PageObjectResponse;
  share(id: string, integrationId: string): void;
  unshare(id: string, integrationId: string): void;
  /** A one-time authorization code for an OAuth integration, as Notion's consent screen would redirect with. */
  authorize(integrationId: string, options?: { readonly redirectUri?: string }): string;
  /** Make a bearer token (internal or OAuth) stop working. */
  revokeToken(token: string): void;
  /** Change an integration's capabilities, as its owner would in its settings. */
  setCapabilities(integrationId: string, capabilities: readonly NotionCapability[]): void;
  fault(rule: NotionFault): void;
  clearFaults(): void;
  setLatency(ms: number): void;
  /** The blocks directly under a page or block, in order, for assertions. */
  pageChildren(id: string): BlockObjectResponse[];
  /** Requests received and not yet answered (held by latency, say). */
  inFlight(): number;
  close(): Promise<void>;
}

/**
 * Start a Notion API emulator on 127.0.0.1, speaking enough of the public API for the Toolgate
 * Notion family: bearer integration and OAuth tokens, the `Notion-Version` header, capabilities per
 * integration, sharing, search, pages, blocks, data sources, comments and `users/me`, with
 * Notion's own error codes. State lives in memory; `fault()` injects 429s, 5xx, conflicts,
 * validation errors, latency and dropped connections after an effect.
 */
export async function startNotionEmulator(options: NotionEmulatorOptions = {}): Promise<NotionEmulator> {
  const world = new NotionWorld(options.clock ?? Date.now);
  const requests: NotionRequestRecord[] = [];
  const faults = new FaultList();
  let latencyMs = options.latencyMs ?? 0;

  for (const integration of options.seed?.integrations ?? []) world.addIntegration(integration);
  for (const database of options.seed?.databases ?? []) world.seedDatabase(database);
  for (const page of options.seed?.pages ?? []) world.seedPage(page);

  const handle = createRequestHandler({ world, routes: notionRoutes(world), faults, requests, latencyMs: () => latencyMs, clock: options.clock ?? Date.now });
  let inFlight = 0;
  const server = createServer((req, res) => {
    inFlight++;
    res.once("close", () => inFlight--);
    handle(req, res).catch(() => {
      if (!res.headersSent) {
        res.writeHead(500, { "content-type": "application/json" });
        res.end(JSON.stringify({ object: "error", status: 500, code: "internal_server_error", message: "Unexpected error occurred." }));
      }
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port ?? 0, "127.0.0.1", () => resolve());
  });
  const port = (server.address() as AddressInfo).port;

  return {
    url: `http://127.0.0.1:${port}`,
    authorizeUrl: `http://127.0.0.1:${port}/v1/oauth/authorize`,
    port,
    world,
    requests,
    addIntegration: (seed) => world.addIntegration(seed),
    seedDatabase: (seed) => world.seedDatabase(seed),
    seedPage: (seed) => world.seedPage(seed),
    share: (id, integrationId) => world.share(id, integrationId),
    unshare: (id, integrationId) => world.unshare(id, integrationId),
    authorize: (integrationId, authorizeOptions = {}) => issueAuthorizationCode(world, integrationId, authorizeOptions.redirectUri),
    revokeToken(token) {
      const record = world.tokens.get(token);
      if (record) record.revoked = true;
    },
    setCapabilities(integrationId, capabilities) {
      const integration = world.integrations.get(integrationId);
      if (!integration) throw new Error(`no integration ${integrationId}`);
      integration.capabilities.clear();
      for (const c of capabilities) integration.capabilities.add(c);
    },
    fault: (rule) => faults.add(rule),
    clearFaults: () => faults.clear(),
    setLatency(ms) {
      latencyMs = ms;
    },
    pageChildren(id) {
      const key = normalizeId(id) ?? id;
      const holder = world.pages.get(key) ?? world.blocks.get(key);
      return (holder?.children ?? []).map((childId) => world.blocks.get(childId)!.block);
    },
    inFlight: () => inFlight,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
