/**
 * How an imported stdio MCP server is started: under bubblewrap by default (`sandbox: "auto"`) —
 * no network, its own process, IPC and host-name namespaces, a private `/tmp`, `/proc` and `/dev`,
 * the system paths core's verifier sandbox uses and the server's working directory read-only, and
 * nothing else of the host (so not the gate's state) — or, where bwrap is missing, unsandboxed with
 * a warning and an isolation that says so.
 */
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import path from "node:path";
import { ToolError, type RuntimeIsolation } from "@toolgate/core";
import { bubblewrapMasks, DEFAULT_SANDBOX_READ_ONLY_PATHS, isProtectedPath } from "@toolgate/core/boundary";

/** `auto` (default): bubblewrap where bwrap is found, otherwise none with a warning. `bubblewrap`: required. */
export type McpSandboxOption =
  | "auto"
  | "bubblewrap"
  | "none"
  | {
      readonly kind: "auto" | "bubblewrap";
      /** Let the server reach the network; default false. */
      readonly network?: boolean;
      /** More host paths the server may read (its install directory, its modules); absolute. */
      readonly readOnlyPaths?: readonly string[];
      /** Where bwrap is; default the first on PATH, then /usr/bin and /bin. */
      readonly bwrapPath?: string;
    };

/** The argv that starts the server, and what the inventory may claim about it. */
export interface StdioLaunch {
  readonly command: string;
  readonly args: readonly string[];
  readonly isolation: RuntimeIsolation;
  /** Set when the server runs with less isolation than the default promises. */
  readonly warning: string | undefined;
}

export function stdioLaunch(name: string, command: string, args: readonly string[], cwd: string | undefined, option: McpSandboxOption = "auto"): StdioLaunch {
  const spec = typeof option === "string" ? { kind: option } : option;
  const where = path.resolve(cwd ?? process.cwd());
  const notes = `MCP server over stdio: ${command}`;
  const unsandboxed = (why: string): StdioLaunch => ({
    command,
    args,
    isolation: { network: "unrestricted", filesystem: "host", secrets: "none", subprocess: "process", notes: `${notes}; no sandbox (${why})` },
    warning: why === "sandbox: none" ? undefined : `MCP server ${name} runs without a sandbox: ${why}`,
  });
  if (spec === null || typeof spec !== "object" || !["auto", "bubblewrap", "none"].includes(spec.kind)) {
    throw new ToolError("config_invalid", `MCP server ${name}: sandbox must be "auto", "bubblewrap", "none" or { kind, network, readOnlyPaths }`);
  }
  if (spec.kind === "none") return unsandboxed("sandbox: none");
  const settings = spec as Exclude<McpSandboxOption, string>;
  const found =
    settings.bwrapPath ??
    `${process.env["PATH"] ?? ""}:/usr/bin:/bin`
      .split(":")
      .map((dir) => path.join(dir, "bwrap"))
      .find((f) => path.isAbsolute(f) && existsSync(f));
  const bwrap = found === undefined ? undefined : workingBwrap(found);
  if (bwrap === undefined) {
    if (spec.kind === "bubblewrap")
      throw new ToolError(
        "config_invalid",
        `MCP server ${name}: sandbox "bubblewrap" needs the bwrap program, which was not found or cannot make a sandbox here`,
      );
    return unsandboxed("bubblewrap (bwrap) was not found or cannot make a sandbox here");
  }
  const extra = settings.readOnlyPaths ?? [];
  for (const p of extra) {
    if (typeof p !== "string" || !path.isAbsolute(p) || p.includes("\0"))
      throw new ToolError("config_invalid", `MCP server ${name}: readOnlyPaths must be absolute paths`);
  }
  const network = settings.network === true;
  const argv = [...(network ? [] : ["--unshare-net"]), "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try"];
  // The private mounts first: a directory bound after them shows through (a server kept under /tmp).
  argv.push("--die-with-parent", "--new-session", "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp");
  const bound = [...DEFAULT_SANDBOX_READ_ONLY_PATHS, ...(network ? ["/etc/resolv.conf"] : []), ...extra, where];
  for (const p of bound) {
    if (isProtectedPath(p)) throw new ToolError("config_invalid", `MCP server ${name}: ${p} is in the gate's protected state; a server may not read it`);
    argv.push("--ro-bind-try", p, p);
  }
  return {
    command: bwrap,
    // The gate's state (protected paths) is masked wherever a bound directory holds it, as it is
    // when the server starts: a directory by an empty one, a file by an empty file.
    get args() {
      return [...argv, ...bubblewrapMasks(bound), "--chdir", where, "--", command, ...args];
    },
    isolation: {
      network: network ? "unrestricted" : "none",
      filesystem: `read-only: system paths and ${[where, ...extra].join(", ")}; private /tmp`,
      secrets: "none",
      subprocess: "process",
      notes: `${notes}, inside bubblewrap`,
    },
    warning: undefined,
  };
}

/**
 * Where bwrap is and that it can make a sandbox here (it may be installed where user namespaces are
 * off): a trial run with the namespaces the server gets. Undefined when it cannot.
 */
function workingBwrap(bwrap: string): string | undefined {
  const trial = spawnSync(
    bwrap,
    ["--unshare-net", "--unshare-pid", "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev", "--", process.execPath, "-e", ""],
    {
      stdio: "ignore",
      timeout: 10_000,
      env: { PATH: process.env["PATH"] ?? "/usr/bin:/bin" },
    },
  );
  return trial.status === 0 ? bwrap : undefined;
}
