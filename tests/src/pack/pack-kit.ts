// Packing the publishable packages as npm would publish them, and the rules each tarball must keep.
import { spawn, spawnSync, type SpawnSyncReturns } from "node:child_process";
import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

export const root = fileURLToPath(new URL("../../../", import.meta.url));

export interface Manifest {
  name: string;
  version: string;
  private?: boolean;
  license?: string;
  repository?: { type?: string; url?: string; directory?: string };
  engines?: Record<string, string>;
  publishConfig?: Record<string, string>;
  bin?: Record<string, string>;
  exports?: Record<string, string | Record<string, string>>;
  scripts?: Record<string, string>;
  dependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
  peerDependenciesMeta?: Record<string, { optional?: boolean }>;
}

/** A package as the repository holds it. */
export interface Publishable {
  /** The folder under packages/. */
  dir: string;
  manifest: Manifest;
}

/** A packed package: its tarball and every entry in it with its mode bits. */
export interface Packed extends Publishable {
  tarball: string;
  /** Paths inside the tarball without the leading `package/`, with their permission bits. */
  entries: Map<string, number>;
  /** A file of the tarball, as text. */
  read(path: string): string;
}

/** Every package under packages/ that is not private: what `npm publish` would send. */
export function publishablePackages(): Publishable[] {
  return readdirSync(join(root, "packages"))
    .map((dir) => ({ dir, manifest: JSON.parse(readFileSync(join(root, "packages", dir, "package.json"), "utf8")) as Manifest }))
    .filter((p) => !p.manifest.private);
}

/** Child processes see no npm_* variables of the run that started the tests (a parent `npm test` sets its own prefix, workspace and scripts). */
export function cleanEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) if (!/^npm_/i.test(key) && key !== "INIT_CWD") env[key] = value;
  return { ...env, npm_config_audit: "false", npm_config_fund: "false", npm_config_update_notifier: "false", ...extra };
}

export function run(command: string, args: readonly string[], cwd: string, env: NodeJS.ProcessEnv = cleanEnv()): SpawnSyncReturns<string> {
  return spawnSync(command, args, { cwd, env, encoding: "utf8", maxBuffer: 64 * 1024 * 1024 });
}

/** `run` without blocking, so several checkers can share the machine's cores. */
export function runAsync(command: string, args: readonly string[], cwd: string): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd, env: cleanEnv() });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (d: string) => (stdout += d));
    child.stderr.setEncoding("utf8").on("data", (d: string) => (stderr += d));
    child.on("error", reject);
    child.on("close", (status) => resolve({ status, stdout, stderr }));
  });
}

/** `task` over every item, at most `limit` at once, results in the items' order. */
export async function mapLimit<T, R>(items: readonly T[], limit: number, task: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = [];
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      results[i] = await task(items[i]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}

/** The permission bits of an `ls -l` style mode string (`-rwxr-xr-x` is 0o755). */
const modeBits = (text: string): number => [...text.slice(1, 10)].reduce((bits, c) => (bits << 1) | (c === "-" ? 0 : 1), 0);

/** Pack every publishable package with one `npm pack` into `dest`, and list each tarball. */
export function packAll(dest: string): Packed[] {
  const packages = publishablePackages();
  const r = run("npm", ["pack", "--pack-destination", dest, "--json", ...packages.flatMap((p) => ["-w", `packages/${p.dir}`])], root);
  if (r.status !== 0) throw new Error(`npm pack failed: ${r.stderr}`);
  const reports = JSON.parse(r.stdout) as { name: string; filename: string }[];
  return packages.map((p) => {
    const report = reports.find((x) => x.name === p.manifest.name);
    if (!report) throw new Error(`npm pack made no tarball for ${p.manifest.name}`);
    const tarball = join(dest, report.filename);
    const list = run("tar", ["-tvzf", tarball], dest);
    if (list.status !== 0) throw new Error(`tar could not list ${tarball}: ${list.stderr}`);
    const entries = new Map<string, number>();
    for (const line of list.stdout.split("\n").filter(Boolean)) {
      const fields = line.trim().split(/\s+/);
      entries.set(
        fields
          .slice(5)
          .join(" ")
          .replace(/^package\//, ""),
        modeBits(fields[0]!),
      );
    }
    const read = (path: string) => run("tar", ["-xzOf", tarball, `package/${path}`], dest).stdout;
    // The manifest as published (npm may rewrite fields on the way), not the one in the tree.
    return { dir: p.dir, manifest: JSON.parse(read("package.json")) as Manifest, tarball, entries, read };
  });
}

/**
 * A spec the registry does not answer: a protocol (in any letter case) or a git host's shortcut, the
 * bare `owner/repo` GitHub form, or a path (POSIX, home, Windows drive). `npm:` aliases go to the registry.
 */
const LOCAL_SPEC = /^(file|link|workspace|portal|git|git\+[a-z]+|github|gitlab|bitbucket|gist|https?):|^[./~\\]|^[a-z]:[\\/]|^[^@:\s/]+\/[^\s/]/i;
/** One exact version (a prerelease too), or an `npm:` alias to one. */
const EXACT_SPEC = /^(npm:(@[^/@\s]+\/)?[^/@\s]+@)?\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$/;
const INSTALL_SCRIPTS = ["preinstall", "install", "postinstall", "prepare"];

/**
 * What is wrong with one packed package, as a list of sentences (empty when it is fit to publish).
 * `versions` maps each publishable package's name to its version; `license` is the repository's licence text.
 */
export function packProblems(
  packed: { dir: string; manifest: Manifest; entries: ReadonlyMap<string, number>; read(path: string): string },
  versions: ReadonlyMap<string, string>,
  license: string,
): string[] {
  const { dir, manifest: m, entries } = packed;
  const problems: string[] = [];
  const bins = Object.values(m.bin ?? {}).map((t) => t.replace(/^\.\//, ""));
  // Only what a user needs: the build, the README, the licence, the manifest, and any bin launcher.
  for (const path of entries.keys()) {
    const allowed = ["package.json", "README.md", "LICENSE"].includes(path) || path.startsWith("dist/") || bins.includes(path);
    if (!allowed) problems.push(`${path} is packed but is neither dist, README, LICENSE nor a bin`);
    if (/\.test(-d)?\.|(^|\/)fixtures\//.test(path)) problems.push(`${path} is a test or fixture`);
  }
  for (const path of ["package.json", "README.md", "LICENSE"]) if (!entries.has(path)) problems.push(`${path} is not packed`);
  if (entries.has("LICENSE") && packed.read("LICENSE") !== license) problems.push("LICENSE is not the repository's licence");
  if (m.license !== "Apache-2.0") problems.push(`license is ${JSON.stringify(m.license)}, not the repository's Apache-2.0`);
  if (m.repository?.type !== "git" || !m.repository.url || m.repository.directory !== `packages/${dir}`)
    problems.push(`repository must be { type: "git", url, directory: "packages/${dir}" }, not ${JSON.stringify(m.repository)}`);
  if (!m.engines?.["node"]) problems.push("engines.node is missing");
  if (m.publishConfig?.["access"] !== "public") problems.push("publishConfig.access is not public (a scoped package would publish restricted)");
  for (const [name, target] of Object.entries(m.bin ?? {})) {
    const path = target.replace(/^\.\//, "");
    const mode = entries.get(path);
    if (mode === undefined) problems.push(`bin ${name}: ${path} is not packed`);
    else if ((mode & 0o111) !== 0o111) problems.push(`bin ${name}: ${path} is packed with mode ${mode.toString(8)}, not executable`);
  }
  for (const [subpath, target] of Object.entries(m.exports ?? {})) {
    if (subpath.endsWith(".json")) continue;
    const conditions = typeof target === "string" ? {} : target;
    if (Object.keys(conditions)[0] !== "types") problems.push(`exports["${subpath}"] does not start with a types condition`);
    for (const condition of ["types", "import"]) {
      const file = conditions[condition]?.replace(/^\.\//, "");
      if (!file || !entries.has(file)) problems.push(`exports["${subpath}"].${condition} (${String(file)}) is not packed`);
    }
  }
  for (const field of ["dependencies", "peerDependencies", "optionalDependencies"] as const) {
    for (const [name, spec] of Object.entries(m[field] ?? {})) {
      if (LOCAL_SPEC.test(spec)) problems.push(`${field}.${name} is ${spec}: only this machine can resolve it`);
      // What a user's install resolves is what was released and tested: one exact version (peers may range).
      if (field !== "peerDependencies" && !LOCAL_SPEC.test(spec) && !EXACT_SPEC.test(spec))
        problems.push(`${field}.${name} is ${JSON.stringify(spec)}, not one exact version`);
      const version = versions.get(name);
      if (version && spec !== version && spec !== `^${version}`) problems.push(`${field}.${name} is ${spec}, but the release has ${name}@${version}`);
    }
  }
  for (const script of INSTALL_SCRIPTS) if (m.scripts?.[script]) problems.push(`scripts.${script} would run on every user's install`);
  return problems;
}
