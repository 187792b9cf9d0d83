import { Argument, Command, CommanderError, Option } from "commander";
import { approvalsApprove, approvalsDeny, approvalsList, approvalsShow, type ApproveOptions } from "./commands/approvals.js";
import { budgetsCommand } from "./commands/budgets.js";
import { auditExport, auditHead, auditTail, auditVerify, parseExpectedHead, type AuditVerifyOptions } from "./commands/audit.js";
import { callCommand } from "./commands/call.js";
import { consoleCommands } from "./commands/console.js";
import { authorityCommands } from "./commands/authority-commands.js";
import { connectionsAdd, connectionsRevoke, connectionsStatus } from "./commands/connections.js";
import { connectionsConnect, type ConnectOptions } from "./commands/connect.js";
import { docsCommand } from "./commands/docs.js";
import { inventoryCommand } from "./commands/inventory.js";
import { journalPrune } from "./commands/journal.js";
import { outboxList, outboxRecover, outboxResolve } from "./commands/outbox.js";
import { mcpClientsCommands } from "./commands/mcp-clients.js";
import { serveMcp, type ServeMcpCliOptions } from "./commands/serve-mcp.js";
import { toolInit, toolTest } from "./commands/tool.js";
import { CliFailure, EXIT, processIo, reportFailure, wholeNumber, type Io } from "./output.js";
import { openRuntime, type Runtime } from "./runtime.js";

const EXIT_HELP = `
Exit codes:
  0  done
  1  the command ran and found a failure (a refused call, drifted docs, a broken audit chain)
  2  bad flags or arguments
  3  the composition file, journal or keys could not be loaded
  4  the call waits for a human's approval`;

/** Extra subcommands other packages contribute (connections, tool, serve-mcp). */
export type CommandPlugin = (program: Command, context: { withRuntime: WithRuntime; io: Io }) => void;
export type WithRuntime = (action: (runtime: Runtime, ...args: never[]) => Promise<number>) => (...args: unknown[]) => Promise<void>;

/** Run the CLI with `argv` (without node and the script); resolves with the exit code. */
export async function run(argv: readonly string[], options: { io?: Io; cwd?: string; plugins?: readonly CommandPlugin[] } = {}): Promise<number> {
  const io = options.io ?? processIo;
  let exitCode: number = EXIT.ok;
  const program = new Command("toolgate")
    .description("Governed tools for AI agents: docs, inventory, calls, budgets, approvals, operators, kill switch, console, audit, outbox.")
    .option("-c, --config <file>", "composition file (default: toolgate.config.{ts,mjs,js,json} here)")
    .option("--debug", "print stack traces")
    .addHelpText("after", EXIT_HELP)
    .exitOverride()
    .showHelpAfterError("(add --help for the command's options)")
    .configureOutput({ writeOut: (s) => io.out(s.trimEnd()), writeErr: (s) => io.err(s.trimEnd()) });

  const withRuntime: WithRuntime =
    (action) =>
    async (...args: unknown[]) => {
      const globals = program.opts<{ config?: string; debug?: boolean }>();
      const runtime = await openRuntime({ cwd: options.cwd ?? process.cwd(), ...(globals.config ? { configPath: globals.config } : {}) });
      try {
        exitCode = await (action as (r: Runtime, ...a: unknown[]) => Promise<number>)(runtime, ...args);
      } finally {
        await runtime.close();
      }
    };

  program
    .command("docs")
    .description("render one Markdown page per family from the manifests")
    .option("--out <dir>", "where the pages go", "docs/tools")
    .option("--check", "write nothing; fail when the committed pages drift", false)
    .action(withRuntime((rt, opts: { out: string; check: boolean }) => docsCommand(rt, opts, io)));

  program
    .command("inventory")
    .description("the capability inventory: every tool, its boundary, tokens, risk, approval and who can reach it")
    .option("--profile <name>", "only the tools this profile can reach")
    .option("--json", "print JSON", false)
    .action(withRuntime((rt, opts: { profile?: string; json: boolean }) => inventoryCommand(rt, opts, io)));

  program
    .command("budgets")
    .description("what each profile's limits have used: calls counted per limit and principal or tenant, and when the next call fits")
    .option("--profile <name>", "only this profile's limits")
    .option("--json", "print JSON", false)
    .action(withRuntime((rt, opts: { profile?: string; json: boolean }) => budgetsCommand(rt, opts, io)));

  program
    .command("call")
    .description("make one governed call; prints the result, or the approval preview and request id")
    .argument("<tool>", "tool id, e.g. repo.read_file")
    .requiredOption("--input <json|@file>", "the input as JSON, or @path to a JSON file")
    .requiredOption("--profile <name>", "the profile the call runs under")
    .option("--principal <id>", "who is calling (default from the config, else cli)")
    .option("--tenant <id>", "the tenant (default from the config, else default)")
    .option("--key <key>", "idempotency key")
    .option("--json", "print the result as JSON", false)
    .action(withRuntime((rt, tool: string, opts: Parameters<typeof callCommand>[2]) => callCommand(rt, tool, opts, io)));

  const approvals = program.command("approvals").description("requests waiting for a human, their previews and decisions");
  approvals
    .command("list")
    .option("--status <list>", "pending, granted, denied, consumed, expired (comma-separated) or all", "pending")
    .option("--json", "print JSON", false)
    .action(withRuntime((rt, opts: { status: string; json: boolean }) => approvalsList(rt, opts, io)));
  approvals
    .command("show")
    .argument("<request>", "request id")
    .option("--json", "print JSON", false)
    .action(withRuntime((rt, id: string, opts: { json: boolean }) => approvalsShow(rt, id, opts, io)));
  approvals
    .command("approve")
    .description("approve as the owner (recorded as owner); the same call, retried anywhere, then runs once")
    .argument("<request>", "request id")
    .option("--ttl <duration>", "how long the grant stays usable", "10m")
    .option("--input <file>", "approve with an edited input: a JSON file (- for stdin); prints the changes and the recomputed preview first")
    .option("--preview-hash <hash>", "the preview hash you checked: of the edit (with --input) or of an edited request's current version")
    .option("--from-version <n>", "with --input and --preview-hash: the request version your check started from (the command prints it)")
    .addOption(new Option("--approver <name>").hideHelp())
    .action(withRuntime((rt, id: string, opts: ApproveOptions) => approvalsApprove(rt, id, opts, io)));
  approvals
    .command("deny")
    .description("deny as the owner (recorded as owner)")
    .argument("<request>", "request id")
    .option("--reason <text>", "why (required)")
    .addOption(new Option("--approver <name>").hideHelp())
    .action(withRuntime((rt, id: string, opts: { approver?: string; reason?: string }) => approvalsDeny(rt, id, opts, io)));
  authorityCommands(program, { withRuntime, io });

  const audit = program.command("audit").description("the audit journal");
  audit
    .command("tail")
    .option("-n, --lines <n>", "how many events (a whole number)", wholeNumber, 20)
    .option("--json", "one JSON event per line", false)
    .action(withRuntime((rt, opts: { lines: number; json: boolean }) => auditTail(rt, opts, io)));
  audit
    .command("head")
    .description("the newest event as SEQ:MAC; keep it elsewhere and pass it to verify --expected-head")
    .option("--json", "print seq, mac, the event's time and the journal kind as JSON", false)
    .action(withRuntime((rt, opts: { json: boolean }) => auditHead(rt, opts, io)));
  audit
    .command("verify")
    .description("walk the HMAC chain; names the first bad entry")
    .option("--expected-head <SEQ:MAC>", "a head kept elsewhere: fail unless the chain holds that event (finds a cut tail)", parseExpectedHead)
    .option("--witness <file>", "a witness file: fail unless the chain holds every checkpoint in it")
    .option("--json", "print the verdict as JSON", false)
    .action(withRuntime((rt, opts: AuditVerifyOptions) => auditVerify(rt, opts, io)));
  audit
    .command("export")
    .option("--out <file>", "write JSON lines here (mode 0600) instead of stdout")
    .action(withRuntime((rt, opts: { out?: string }) => auditExport(rt, opts, io)));

  const outbox = program.command("outbox").description("intents and their effect state");
  outbox
    .command("list")
    .option("--state <list>", "pending, completed, failed, unknown (comma-separated) or all", "pending,unknown")
    .option("--json", "print JSON", false)
    .action(withRuntime((rt, opts: { state: string; json: boolean }) => outboxList(rt, opts, io)));
  outbox
    .command("recover")
    .description("after a crash: replay idempotent intents with the same key; leave the rest for an operator")
    .option("--older-than <duration>", "only entries untouched this long", "5m")
    .option("--json", "print JSON", false)
    .action(withRuntime((rt, opts: { olderThan: string; json: boolean }) => outboxRecover(rt, opts, io)));
  outbox
    .command("resolve")
    .argument("<key>", "outbox key")
    .addOption(new Option("--applied", "the effect did happen"))
    .addOption(new Option("--not-applied", "the effect did not happen"))
    .addOption(new Option("--operator <name>").hideHelp())
    .option("--note <text>", "why (recorded; the decision is the owner's)")
    .action(
      withRuntime((rt, key: string, opts: { applied?: boolean; notApplied?: boolean; operator?: string; note?: string }) => outboxResolve(rt, key, opts, io)),
    );

  program
    .command("journal")
    .description("the journal's storage")
    .command("prune")
    .description("remove the output bodies of entries settled before a date (their sealed hashes stay)")
    .requiredOption("--before <date>", "an ISO-8601 date or time in the past, e.g. 2026-01-31")
    .option("--json", "print JSON", false)
    .action(withRuntime((rt, opts: { before: string; json: boolean }) => journalPrune(rt, opts, io)));

  const connections = program.command("connections").description("the token vault: connections to providers");
  connections
    .command("add")
    .description("add a connection from a token JSON file")
    .requiredOption("--id <id>", "connection id")
    .requiredOption("--provider <name>", "provider, e.g. google or notion")
    .requiredOption("--file <path>", "token JSON file")
    .option("--tenant <id>", "serve only this tenant")
    .option("--principal <id>", "serve only this principal")
    .option("--default", "the provider's default connection")
    .option("--scopes <list>", "granted scopes, when the file does not say")
    .action(withRuntime((rt, opts: Parameters<typeof connectionsAdd>[1]) => connectionsAdd(rt, opts, io)));
  connections
    .command("connect")
    .description("connect an account in the browser: OAuth authorization code with PKCE through a loopback redirect; stores the tokens")
    .addArgument(new Argument("<provider>", "google or notion").choices(["google", "notion"]))
    .option("--id <id>", "connection id (default: the provider's name)")
    .option("--scopes <list>", "scopes to ask for (default: those the composed tools need)")
    .option("--tenant <id>", "serve only this tenant")
    .option("--principal <id>", "serve only this principal")
    .option("--default", "the provider's default connection")
    .option("--no-browser", "print the address only; never open a browser")
    .option("--timeout <seconds>", "how long to wait for the browser's answer", wholeNumber, 300)
    .option("--port <n>", "the loopback listener's port (default: any free one; for a provider that needs the registered port)", wholeNumber)
    .action(withRuntime((rt, provider: "google" | "notion", opts: ConnectOptions) => connectionsConnect(rt, provider, opts, io)));
  connections
    .command("status")
    .argument("[id]", "one connection")
    .option("--json", "print JSON", false)
    .action(withRuntime((rt, id: string | undefined, opts: { json: boolean }) => connectionsStatus(rt, id, opts, io)));
  connections
    .command("revoke")
    .argument("<id>", "connection id")
    .action(withRuntime((rt, id: string) => connectionsRevoke(rt, id, io)));

  const tool = program.command("tool").description("tool processes in any language");
  tool
    .command("init")
    .description("scaffold a tool process with its conformance test")
    .argument("<dir>", "where; must be empty unless --force")
    .option("--lang <lang>", "ts or python", "ts")
    .option("--name <name>", "the process name (default: the directory's name)")
    .option("--force", "write into a non-empty directory (deletes nothing)")
    .action(async (dir: string, opts: { lang: string; force?: boolean; name?: string }) => {
      exitCode = await toolInit(dir, opts, io);
    });
  tool
    .command("test")
    .description("drive a tool process through the protocol checks; one pass/fail line per check")
    .allowUnknownOption()
    .argument("[args...]", "[--input tool=<json>] [--slow tool=<json>] -- <command> [args]")
    .helpOption(false)
    .action(async (_args: unknown, _opts: unknown, command: Command) => {
      const rest = argv.slice(argv.indexOf("test") + 1);
      // Its own flags pass through to the checks; a --help before `--` is toolgate's, never a program to start.
      const own = rest.includes("--") ? rest.slice(0, rest.indexOf("--")) : rest;
      if (own.includes("--help") || own.includes("-h")) {
        io.out(command.helpInformation());
        return;
      }
      exitCode = await toolTest(rest, io);
    });

  program
    .command("serve-mcp")
    .description("serve the gate as an MCP server: stdio, or Streamable HTTP on 127.0.0.1 with --http (every client needs its token)")
    .option("--profile <name>", "stdio: the profile the MCP client's calls run under")
    .option("--principal <id>", "stdio: who the client is")
    .option("--tenant <id>", "stdio: the tenant")
    .option("--client <name>", "stdio: a registered MCP client whose record gives profile, principal, tenant and elicitation")
    .option("--http <port>", "serve Streamable HTTP on 127.0.0.1 at this port (0: any); clients authenticate with toolgate mcp-clients tokens")
    .option("--tools-poll-ms <ms>", "how often each session looks for a change in its tools and tells the client (default 5000; 0: never; 100 to 3600000)")
    .action(withRuntime((rt, opts: ServeMcpCliOptions) => serveMcp(rt, opts, io)));
  mcpClientsCommands(program, { withRuntime, io });

  consoleCommands(program, { withRuntime, io });

  for (const plugin of options.plugins ?? []) plugin(program, { withRuntime, io });

  try {
    await program.parseAsync([...argv], { from: "user" });
    return exitCode;
  } catch (error) {
    if (error instanceof CommanderError) {
      return error.exitCode === 0 ? EXIT.ok : EXIT.usage;
    }
    return reportFailure(io, error, Boolean(program.opts<{ debug?: boolean }>().debug));
  }
}

export { CliFailure };
