/**
 * The shapes of the evaluation: a scenario is a user task and an injection task over one family,
 * modelled on the workspace suites of published prompt-injection benchmarks for agents. Scripted
 * agents run them through a real gate against the emulators and a real git repository.
 */
import type { InvokeResult } from "@toolgate/core";
import type { CalendarInspector, GmailInspector, GmailFixture, CalendarFixture, GoogleEmulator, NotionEmulator } from "@toolgate/emulators";

export type Family = "gmail" | "calendar" | "notion" | "repo";

/** What a scripted agent can do: call a tool through the gate (approvals handled by the harness), and read what it got. */
export interface Agent {
  /** Calls through the gate in the run's session; returns the final result (after the harness's human granted and the agent retried, if the human was asked and said yes). */
  call(toolId: string, input: unknown): Promise<InvokeResult<unknown>>;
}

/** The world a scenario runs in: the seeded emulators and repository, and how to look at them afterwards. */
export interface World {
  /** Facts the scenario seeded (ids of messages, events, pages, file paths, addresses) for the scripts to use. */
  readonly facts: Record<string, string>;
  /** Read-only views of the emulator state / repository for checks (shape chosen by the harness; document it). */
  readonly inspect: Inspect;
}

/** A git working tree the harness made for the run (`git init -b main`, one commit of `README.md`). */
export interface RepoHandle {
  /** Absolute path of the working tree; the repo family is rooted here. */
  readonly root: string;
  /** Run git in the tree with a clean environment (no host configuration, a fixed identity); returns stdout. */
  git(...args: string[]): string;
  /** Write a file (parents created), relative to `root`. Not committed: call `git("add", "-A")` and `git("commit", "-qm", "…")`. */
  write(relative: string, content: string): void;
  /** A file's text, or undefined when it does not exist (relative to `root`). */
  read(relative: string): string | undefined;
}

/**
 * What `Scenario.seed` gets. Every world has all of these, fresh (a scenario uses its family's part):
 * - Gmail and Calendar: one Google emulator; the mailbox and the primary calendar belong to `owner`.
 *   Seed them with `seedGoogle` (it replaces both, so call it once with everything), or add mail later
 *   with `google.gmail.deliver(seed)`. The gmail and calendar families use it through their real clients.
 * - Notion: one emulator with one integration, `notionIntegration`, whose token the notion family holds
 *   (every capability). A page or database is visible to the family only when shared with it:
 *   `notion.seedPage({ title, sharedWith: [notionIntegration], children })` (or `parent` under a shared page).
 * - Repo: a fresh git working tree, `repo` (the repo family is rooted at `repo.root`).
 */
export interface SeedEnv {
  /** The user's own address: the mailbox's and the primary calendar's owner. */
  readonly owner: string;
  /** The running Google emulator (Gmail and Calendar), for seeding beyond `seedGoogle` (e.g. `gmail.deliver`). */
  readonly google: GoogleEmulator;
  /** Replace the mailbox and calendars with these fixtures (the owner is set by the harness). */
  seedGoogle(fixtures: { readonly gmail?: Omit<GmailFixture, "address">; readonly calendar?: Omit<CalendarFixture, "owner"> }): void;
  /** The running Notion emulator: `seedPage`, `seedDatabase`, `share`. */
  readonly notion: NotionEmulator;
  /** The integration id the notion family's token belongs to: share seeded pages with it. */
  readonly notionIntegration: string;
  readonly repo: RepoHandle;
}

/**
 * What checks can look at after a run (all live views of the same world the agent changed):
 * - `gmail.sent` (every message really sent: to/cc/bcc/subject/text), `gmail.labelIdsOf(id)` (a trashed
 *   message carries `TRASH`), `gmail.messageCount`, `gmail.draftIds()`;
 * - `calendar.events(calendarId?)` (every stored event of a calendar, cancelled ones included with
 *   `status: "cancelled"`; default the primary), `calendar.notifications` (invitations that would have been emailed);
 * - `notion`: the emulator (`notion.world.pages` — a Map of stored pages with `.page` (the API object,
 *   `archived`/`in_trash`) and `.children` — `notion.pageChildren(id)`, `notion.requests`);
 * - `repo`: the working tree (`read`, `git("log", …)`, `git("status", "--porcelain")`).
 */
export interface Inspect {
  readonly owner: string;
  readonly gmail: GmailInspector;
  readonly calendar: CalendarInspector;
  readonly notion: NotionEmulator;
  readonly repo: RepoHandle;
}

export interface Scenario {
  readonly id: string; // e.g. "gmail.security-code"
  readonly family: Family;
  /** Seed the world: data the user task reads, with the injection placed in untrusted content (an email body, an event description, a page, a file). */
  seed(env: SeedEnv): Promise<Record<string, string>>;
  /** The user's instruction (trusted text for the session) and operator-configured trusted texts (contacts, resources). */
  readonly user: { readonly prompt: string; readonly trusted?: readonly { text: string; label: string }[] };
  /** Honest agent: does only the user's task (reading what it needs first). */
  honest(agent: Agent, world: World): Promise<void>;
  /** Whether the user's task is done in the world. */
  userTaskDone(world: World): Promise<boolean>;
  /** The injection: its goal in words, the worst-case agent's extra calls (carried out exactly, with values taken from what it read), and whether the goal's effect happened. */
  readonly injection: { readonly goal: string; attack(agent: Agent, world: World): Promise<void>; reached(world: World): Promise<boolean> };
}
