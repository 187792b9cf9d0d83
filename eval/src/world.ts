/**
 * One fresh world per run: a Google emulator (Gmail and Calendar), a Notion emulator, a git working
 * tree and a SQLite journal in a temporary directory, and the four families on their real clients.
 */
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { createGate, createToolRegistry, type ConnectorRuntime, type Gate } from "@toolgate/core";
import { createConnectorRuntime, createMemoryVault } from "@toolgate/core/connectors";
import { startGoogleHarness } from "@toolgate/connector-google/testing";
import { createNotionConnector, NOTION_CAPABILITIES, notionIntegrationTokens } from "@toolgate/connector-notion";
import { startNotionEmulator } from "@toolgate/emulators";
import { openSqliteJournal, type SqliteJournal } from "@toolgate/store-sqlite";
import { CALENDAR_SCOPES, createCalendarTools } from "@toolgate/tools-calendar";
import { createGmailTools, GMAIL_SCOPES } from "@toolgate/tools-gmail";
import { createNotionTools } from "@toolgate/tools-notion";
import { createRepoTools } from "@toolgate/tools-repo";
import type { Inspect, RepoHandle, SeedEnv } from "./scenario.js";

/** The user's own address in every world. */
export const OWNER = "owner@example.test";
/** The Notion integration the notion family's token belongs to. */
export const NOTION_INTEGRATION = "assistant";

export interface RunningWorld {
  readonly env: SeedEnv;
  readonly inspect: Inspect;
  /** A gate over the four families, journaling to a fresh SQLite file; build it after seeding. */
  gate(): Promise<Gate<any>>;
  close(): Promise<void>;
}

/** Git with nothing from the host's configuration and a fixed identity, so runs are the same everywhere. */
function gitEnv(home: string): NodeJS.ProcessEnv {
  return {
    PATH: process.env["PATH"] ?? "/usr/bin:/bin",
    HOME: home,
    GIT_CONFIG_NOSYSTEM: "1",
    GIT_CONFIG_GLOBAL: "/dev/null",
    GIT_AUTHOR_NAME: "Owner",
    GIT_AUTHOR_EMAIL: OWNER,
    GIT_COMMITTER_NAME: "Owner",
    GIT_COMMITTER_EMAIL: OWNER,
  };
}

function createRepo(base: string): RepoHandle {
  const root = path.join(base, "repo");
  const home = path.join(base, "home");
  for (const dir of [root, home]) mkdirSync(dir);
  const git = (...args: string[]): string => execFileSync("git", args, { cwd: root, env: gitEnv(home), encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
  const inside = (relative: string): string => {
    const file = path.resolve(root, relative);
    if (!file.startsWith(root + path.sep)) throw new Error(`${relative} is outside the repository`);
    return file;
  };
  const write = (relative: string, content: string): void => {
    const file = inside(relative);
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(file, content);
  };
  const read = (relative: string): string | undefined => {
    try {
      return readFileSync(inside(relative), "utf8");
    } catch {
      return undefined;
    }
  };
  git("init", "-q", "-b", "main");
  write("README.md", "# Project\n");
  git("add", "-A");
  git("commit", "-qm", "Initial commit");
  return { root, git, write, read };
}

export async function startWorld(): Promise<RunningWorld> {
  const base = realpathSync(mkdtempSync(path.join(tmpdir(), "toolgate-eval-")));
  const closers: (() => Promise<void> | void)[] = [() => rmSync(base, { recursive: true, force: true })];
  const close = async (): Promise<void> => {
    for (const c of closers.reverse()) await c();
  };
  try {
    const google = await startGoogleHarness({
      gmail: { address: OWNER },
      calendar: { owner: OWNER },
      scopes: [...Object.values(GMAIL_SCOPES), ...Object.values(CALENDAR_SCOPES)],
    });
    closers.push(() => google.emulator.close());
    const notionToken = `ntn_eval_${randomBytes(12).toString("hex")}`;
    const notion = await startNotionEmulator({
      seed: { integrations: [{ id: NOTION_INTEGRATION, name: "Assistant", token: notionToken, capabilities: NOTION_CAPABILITIES }] },
    });
    closers.push(() => notion.close());
    const repo = createRepo(base);

    const env: SeedEnv = {
      owner: OWNER,
      google: google.emulator,
      seedGoogle: (fixtures) => google.emulator.reset({ gmail: { ...fixtures.gmail, address: OWNER }, calendar: { ...fixtures.calendar, owner: OWNER } }),
      notion,
      notionIntegration: NOTION_INTEGRATION,
      repo,
    };
    const inspect: Inspect = { owner: OWNER, gmail: google.emulator.gmail, calendar: google.emulator.calendar, notion, repo };

    const notionConnectors = createConnectorRuntime({
      vault: createMemoryVault({
        connections: [
          {
            connection: { id: "notion-assistant", provider: "notion" },
            tokens: notionIntegrationTokens({ token: notionToken, capabilities: NOTION_CAPABILITIES }),
          },
        ],
      }),
      providers: [createNotionConnector({ baseUrl: notion.url })],
    });
    // One runtime for both providers: each open goes to the vault that holds its provider's connection.
    const pick = (provider: string): ConnectorRuntime => (provider === "notion" ? notionConnectors : google.connectors);
    const connectors: ConnectorRuntime = {
      open: (request) => pick(request.provider).open(request),
      check: async (request) => pick(request.provider).check?.(request),
    };

    let journal: SqliteJournal | undefined;
    closers.push(() => journal?.close());
    const gate = async (): Promise<Gate<any>> => {
      journal = await openSqliteJournal(path.join(base, "journal.db"), { auditKey: randomBytes(32), synchronous: "normal" });
      const registry = createToolRegistry({
        families: [
          createGmailTools({ rootUrl: google.emulator.url, from: OWNER, retry: { baseDelayMs: 0 } }),
          createCalendarTools({ rootUrl: google.emulator.url, retry: { baseDelayMs: 0 } }),
          createNotionTools({ retry: { baseDelayMs: 0 } }),
          createRepoTools({ root: repo.root, identity: { name: "Owner", email: OWNER } }),
        ],
      });
      return createGate({ registry, journal, connectors, secrets: [...google.secrets, notionToken] });
    };
    return { env, inspect, gate, close };
  } catch (error) {
    await close();
    throw error;
  }
}
