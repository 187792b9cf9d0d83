// The console's browser tests drive real processes: the `toolgate` binary (built dist) serves the
// console and makes the calls in a temp project with a SQLite journal, and a real Chromium (the
// system's package, never a downloaded build) is the person at the desk.
import { execFile, execFileSync, spawn, type ChildProcess } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, symlinkSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium, type Browser, type BrowserContext, type Page } from "playwright-core";
import { afterAll, beforeAll } from "vitest";

const require = createRequire(import.meta.url);
const bin = join(dirname(require.resolve("@toolgate/cli/package.json")), "dist", "bin.js");
const config = fileURLToPath(new URL("./fixtures/console.config.mjs", import.meta.url));
const nodeModules = fileURLToPath(new URL("../../../node_modules", import.meta.url));
/** Where each test leaves a PNG of its page (gitignored; the best are copied to docs/images). */
export const artifacts = fileURLToPath(new URL("../../artifacts/console/", import.meta.url));

const underCi = !["", "0", "false"].includes(process.env["CI"] ?? "");

function findChromium(): string | undefined {
  for (const name of ["chromium", "chromium-browser"]) {
    try {
      const path = execFileSync("sh", ["-c", `command -v ${name}`], { encoding: "utf8" }).trim();
      if (path) return path;
    } catch {
      // not this name
    }
  }
  return undefined;
}

const chromiumPath = findChromium();

/**
 * Why the browser tests are skipped here, or undefined when they run. Under CI they always run:
 * .ci/run installs Debian's chromium package, and without it the tests fail instead of skipping.
 */
export const skipReason: string | undefined =
  chromiumPath || underCi ? undefined : "no chromium on PATH (Debian's chromium package); CI installs it and runs these tests";

/** The system's Chromium, headless. As root (CI, containers) its own sandbox cannot start. */
export async function launchBrowser(): Promise<Browser> {
  if (!chromiumPath) throw new Error("chromium is not on PATH: .ci/run installs Debian's chromium package; the console's browser tests need it");
  return chromium.launch({ executablePath: chromiumPath, args: ["--no-sandbox"] });
}

export interface Run {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** A temp project: the composition file, `.toolgate/` state with a SQLite journal, and runs.log. */
export class Project {
  readonly dir: string;
  constructor() {
    if (!existsSync(bin)) throw new Error(`${bin} is missing: build the CLI first (npm run build)`);
    this.dir = mkdtempSync(join(tmpdir(), "toolgate-console-"));
    copyFileSync(config, join(this.dir, "toolgate.config.mjs"));
    symlinkSync(nodeModules, join(this.dir, "node_modules"));
  }

  /** The real binary in its own process, in this project. */
  toolgate(...args: string[]): Promise<Run> {
    return new Promise((resolve) => {
      execFile(process.execPath, [bin, ...args], { cwd: this.dir, env: { PATH: process.env["PATH"] ?? "" }, timeout: 20_000 }, (error, stdout, stderr) => {
        const code = error ? (typeof error.code === "number" ? error.code : -1) : 0;
        resolve({ code, stdout, stderr });
      });
    });
  }

  /** `toolgate call TOOL --input JSON --profile writer` in another process. */
  call(tool: string, input: unknown): Promise<Run> {
    return this.toolgate("call", tool, "--input", JSON.stringify(input), "--profile", "writer");
  }

  /** Every time a tool's handler ran, in order. */
  runs(): { tool: string; input: unknown }[] {
    const path = join(this.dir, "runs.log");
    if (!existsSync(path)) return [];
    return readFileSync(path, "utf8")
      .split("\n")
      .filter(Boolean)
      .map((line) => JSON.parse(line) as { tool: string; input: unknown });
  }

  /** A new operator; resolves with its one-time login token, read from what the CLI printed. */
  async addOperator(name: string, role: "viewer" | "approver" | "admin", port: number): Promise<{ link: string; token: string; printed: string }> {
    const r = await this.toolgate("operators", "add", name, "--role", role, "--port", String(port));
    if (r.code !== 0) throw new Error(`operators add ${name} exited ${r.code}: ${r.stderr}`);
    const link = /http:\/\/127\.0\.0\.1:\d+\/login\?token=(tgl_[A-Za-z0-9_-]+)/.exec(r.stdout);
    if (!link) throw new Error(`operators add printed no login link: ${r.stdout}`);
    return { link: link[0], token: link[1]!, printed: r.stdout };
  }

  /** An approval request as the journal holds it now (read by another process). */
  async request(id: string): Promise<{ status: string; decidedBy?: string; reason?: string; [k: string]: unknown }> {
    const r = await this.toolgate("approvals", "show", id, "--json");
    if (r.code !== 0) throw new Error(`approvals show ${id} exited ${r.code}: ${r.stderr}`);
    return JSON.parse(r.stdout) as { status: string };
  }

  /** The audit journal as JSON lines (`toolgate audit export`). */
  async audit(): Promise<{ type: string; subject?: string; data?: Record<string, unknown>; [k: string]: unknown }[]> {
    const r = await this.toolgate("audit", "export");
    if (r.code !== 0) throw new Error(`audit export exited ${r.code}: ${r.stderr}`);
    return r.stdout
      .split("\n")
      .filter(Boolean)
      .map((line) => JSON.parse(line) as { type: string });
  }
}

/** The request id a call waiting for approval printed. */
export function requestIdOf(run: Run): string {
  const m = /apr_[0-9a-f-]+/.exec(run.stdout);
  if (run.code !== 4 || !m) throw new Error(`expected approval required (exit 4), got ${run.code}: ${run.stdout}${run.stderr}`);
  return m[0];
}

/** `toolgate console --port 0` as its own process; resolves once it printed where it listens. */
export async function startConsole(project: Project): Promise<{ url: string; port: number; stop(): Promise<void> }> {
  const proc: ChildProcess = spawn(process.execPath, [bin, "console", "--port", "0"], {
    cwd: project.dir,
    env: { PATH: process.env["PATH"] ?? "" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the console printed no URL in 15 s: ${out}`)), 15_000);
    const look = (chunk: Buffer): void => {
      out += chunk.toString();
      const m = /http:\/\/127\.0\.0\.1:(\d+)/.exec(out);
      if (m && m[1] !== "0") {
        clearTimeout(timer);
        resolve(m[0]);
      }
    };
    proc.stdout?.on("data", look);
    proc.stderr?.on("data", look);
    proc.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`the console exited ${code}: ${out}`));
    });
  });
  return {
    url,
    port: Number(new URL(url).port),
    stop: () =>
      new Promise<void>((resolve) => {
        if (proc.exitCode !== null) return resolve();
        proc.once("exit", () => resolve());
        proc.kill("SIGTERM");
      }),
  };
}

export type ConsoleProcess = Awaited<ReturnType<typeof startConsole>>;

/** One temp project, its console process and a browser for a describe block; closed after it. */
export function withConsole(): { project: Project; server: ConsoleProcess; browser: Browser } {
  const desk = {} as { project: Project; server: ConsoleProcess; browser: Browser };
  beforeAll(async () => {
    desk.project = new Project();
    desk.server = await startConsole(desk.project);
    desk.browser = await launchBrowser();
  }, 60_000);
  afterAll(async () => {
    await desk.browser?.close();
    await desk.server?.stop();
  });
  return desk;
}

/** Follow a one-time login link in this browser context and press "Sign in". */
export async function signIn(context: BrowserContext, link: string): Promise<Page> {
  const page = await context.newPage();
  await page.goto(link);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.waitForLoadState();
  return page;
}

/** The session's CSRF token, from any form on the page (the sign-out form carries it too). */
export function csrfOf(page: Page): Promise<string> {
  return page.locator('input[name="csrf"]').first().inputValue();
}

/** Save a PNG of the page as a test artifact: tests/artifacts/console/NAME.png. */
export async function screenshot(page: Page, name: string): Promise<void> {
  mkdirSync(artifacts, { recursive: true });
  await page.screenshot({ path: join(artifacts, `${name}.png`), fullPage: true });
}
