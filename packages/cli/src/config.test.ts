import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { defineProfile } from "@toolgate/core";
import { loadConfig } from "./config.js";

/** Write `toolgate.config.json` with this text in a fresh directory and load it. */
function loadJson(text: string) {
  const path = join(mkdtempSync(join(tmpdir(), "toolgate-config-")), "toolgate.config.json");
  writeFileSync(path, text);
  return loadConfig(path);
}

describe("toolgate.config.json", () => {
  it("parses profiles into frozen profiles with defaults, and keeps journal, audit key, vault and defaults", async () => {
    const config = await loadJson(
      JSON.stringify({
        families: [{ package: "./family.mjs", options: { root: "." } }],
        profiles: [{ name: "reader", allow: ["notes:read", "notes:read"], maxRisk: "low" }],
        journal: { memory: true },
        auditKey: { env: "AUDIT_KEY" },
        vault: { file: "vault.enc", key: { file: "vault.key" } },
        principal: "agent",
      }),
    );
    expect(config.profiles).toEqual([{ name: "reader", allow: ["notes:read"], maxRisk: "low", consents: [], egress: [], onInjection: "flag", limits: [] }]);
    expect(Object.isFrozen(config.profiles[0])).toBe(true);
    expect(config).toMatchObject({
      journal: { memory: true },
      auditKey: { env: "AUDIT_KEY" },
      vault: { file: "vault.enc", key: { file: "vault.key" } },
      principal: "agent",
    });
    expect(typeof config.compose).toBe("function");
  });

  it("names the file and every problem, with where it is", async () => {
    await expect(loadJson("{not json")).rejects.toThrow(expect.objectContaining({ code: "config_invalid", message: "toolgate.config.json:1: not valid JSON" }));
    await expect(loadJson("[]")).rejects.toThrow("toolgate.config.json is invalid: must be a JSON object");
    await expect(loadJson("{}")).rejects.toThrow(
      'toolgate.config.json is invalid: families: must be an array of { "package": name } entries; profiles: must be an array of profiles',
    );
    const bad = { families: [{}], profiles: [{ name: "reader", allow: ["notes:*"], maxRisk: "extreme" }], journal: { mysql: "x" }, auditKey: "key" };
    await expect(loadJson(JSON.stringify(bad))).rejects.toThrow(
      expect.objectContaining({
        code: "config_invalid",
        message:
          "toolgate.config.json is invalid: families.0.package: Invalid input: expected string, received undefined; " +
          'profiles.0.allow.0: token "notes:*" must be an exact "area:verb" token (no wildcards); profiles.0.maxRisk: maxRisk must be one of low, medium, high, critical; ' +
          'journal: must be { "sqlite": path }, { "postgres": url } or { "memory": true }; auditKey: must be { "file": path } or { "env": name }',
      }),
    );
  });
});

describe("profiles and the console section", () => {
  const profile = { name: "writer", allow: ["notes:write"], maxRisk: "high" };
  const json = (extra: Record<string, unknown>, profiles: unknown[] = [profile]) => loadJson(JSON.stringify({ families: [], profiles, ...extra }));

  it("refuses an unknown profile key by name instead of dropping it (a misspelt twoPersonFrom would turn the rule off)", async () => {
    await expect(json({}, [{ ...profile, twoPersonFrm: "high" }])).rejects.toThrow(
      expect.objectContaining({ code: "config_invalid", message: expect.stringContaining('profiles.0: unknown key "twoPersonFrm" (a profile knows') }),
    );
    await expect(json({}, [{ ...profile, twoPersonFrom: "severe" }])).rejects.toThrow(
      "profiles.0.twoPersonFrom: twoPersonFrom must be one of low, medium, high, critical",
    );
    await expect(json({}, [profile, profile])).rejects.toThrow('two profiles are named "writer"');
  });

  it("keeps a profile's limits as defineProfile parses them, and refuses a bad limit by its path", async () => {
    const sends = { name: "sends", tools: ["notes.save_note"], per: "principal", max: 20, windowMs: 86_400_000 };
    const limits = [sends, { tools: "*", maxConcurrent: 2 }];
    const config = await json({}, [{ ...profile, limits }]);
    expect(config.profiles[0]).toEqual(defineProfile({ ...profile, limits } as never));
    expect(config.profiles[0]!.limits).toEqual([
      { kind: "window", id: "sends", tools: ["notes.save_note"], per: "principal", max: 20, windowMs: 86_400_000 },
      { kind: "concurrent", id: "*/concurrent", tools: "*", maxConcurrent: 2 },
    ]);
    expect(Object.isFrozen(config.profiles[0]!.limits)).toBe(true);
    expect((await json({}, [profile])).profiles[0]!.limits).toEqual([]);

    const refused = async (limit: unknown, message: string) =>
      expect(json({}, [{ ...profile, limits: [limit] }])).rejects.toThrow(
        expect.objectContaining({ code: "config_invalid", message: expect.stringContaining(message) }),
      );
    await refused({ ...sends, maxx: 3 }, 'profiles.0.limits.0: unknown key "maxx"');
    await refused({ ...sends, maxConcurrent: 1 }, "not both");
    await refused({ ...sends, max: 0 }, "profiles.0.limits.0.max");
    await refused({ ...sends, windowMs: 10 }, "profiles.0.limits.0.windowMs");
    await refused({ ...sends, per: "worker" }, "profiles.0.limits.0.per");
    await refused({ ...sends, tools: [] }, "profiles.0.limits.0.tools");
    await refused({ ...sends, tools: ["notes.*.*"] }, "profiles.0.limits.0.tools");
    await refused({ tools: "*", per: "tenant", max: 5 }, "windowMs");
    await expect(json({}, [{ ...profile, limits: [sends, sends] }])).rejects.toThrow(/profiles\.0\.limits\.1: .*"sends"/);
    await expect(json({}, [{ ...profile, limits: "20 a day" }])).rejects.toThrow("profiles.0.limits");
  });

  it("a PostgreSQL journal may name its schema (several journals in one database); a bad name is refused", async () => {
    const config = await json({ journal: { postgres: "postgres://127.0.0.1/db", schema: "team_a" } });
    expect(config.journal).toEqual({ postgres: "postgres://127.0.0.1/db", schema: "team_a" });
    await expect(json({ journal: { postgres: "postgres://127.0.0.1/db", schema: "Team-A; drop" } })).rejects.toThrow("journal");
  });

  it("keeps twoPersonFrom on the profile the gate gets", async () => {
    const config = await json({}, [{ ...profile, twoPersonFrom: "high" }]);
    expect(config.profiles[0]).toMatchObject({ name: "writer", twoPersonFrom: "high" });
    expect(Object.isFrozen(config.profiles[0])).toBe(true);
  });

  it("checks a module's profiles and console section as strictly as the JSON file's", async () => {
    const dir = mkdtempSync(join(tmpdir(), "toolgate-config-"));
    const write = (name: string, body: string) => {
      writeFileSync(join(dir, name), `export default { compose: () => ({ families: [] }), ${body} };`);
      return loadConfig(join(dir, name));
    };
    await expect(write("a.mjs", `profiles: [{ name: "w", allow: ["a:b"], maxRisk: "low", twoPersonfrom: "low" }]`)).rejects.toThrow(
      'a.mjs is invalid: profiles.0 (w): unknown key "twoPersonfrom"',
    );
    await expect(write("b.mjs", `profiles: [], console: { webhook: { url: "http://example.com/hook", secret: { env: "X" } } }`)).rejects.toThrow(
      "console.webhook.url: must be an https URL",
    );
    const ok = await write("c.mjs", `profiles: [{ name: "w", allow: ["a:b"], maxRisk: "low", twoPersonFrom: "low" }], console: { port: 9000 }`);
    expect(ok.profiles[0]).toMatchObject({ twoPersonFrom: "low", consents: [] });
    expect(ok.console).toEqual({ port: 9000 });
  });

  it("a webhook: https, or http to this machine only; no credentials in the URL; the secret from a file or variable, never inline", async () => {
    const secret = { file: "hook.secret" };
    for (const url of ["http://10.0.0.5/hook", "https://user:pw@chat.example/hook", "ftp://127.0.0.1/x", "not a url"])
      await expect(json({ console: { webhook: { url, secret } } })).rejects.toThrow("console.webhook.url: must be an https URL");
    await expect(json({ console: { webhook: { url: "https://chat.example/hook", secret: "inline-secret" } } })).rejects.toThrow(
      'console.webhook.secret: must be { "file": path } or { "env": name }',
    );
    await expect(json({ console: { port: 70000 } })).rejects.toThrow("console.port");
    await expect(json({ console: { webhok: {} } })).rejects.toThrow("console");
    const config = await json({ console: { port: 0, webhook: { url: "http://127.0.0.1:9/hook", secret } } });
    expect(config.console).toEqual({ port: 0, webhook: { url: "http://127.0.0.1:9/hook", secret } });
  });

  it("consoleSettings reads the webhook secret: refused when missing, readable by others or short", async () => {
    const { consoleSettings, DEFAULT_CONSOLE_PORT } = await import("./console-config.js");
    const baseDir = mkdtempSync(join(tmpdir(), "toolgate-config-"));
    const hook = (secret: { file: string } | { env: string }) => ({
      baseDir,
      config: { profiles: [], compose: () => ({ families: [] }), console: { webhook: { url: "https://chat.example/h", secret } } },
    });
    expect(await consoleSettings({ baseDir, config: { profiles: [], compose: () => ({ families: [] }) } })).toEqual({ port: DEFAULT_CONSOLE_PORT });
    await expect(consoleSettings(hook({ file: "s" }))).rejects.toThrow("does not exist");
    writeFileSync(join(baseDir, "s"), "x".repeat(40), { mode: 0o644 });
    await expect(consoleSettings(hook({ file: "s" }))).rejects.toThrow("readable by others");
    writeFileSync(join(baseDir, "t"), "short\n", { mode: 0o600 });
    await expect(consoleSettings(hook({ file: "t" }))).rejects.toThrow("shorter than 32");
    writeFileSync(join(baseDir, "u"), `${"k".repeat(40)}\n`, { mode: 0o600 });
    expect(await consoleSettings(hook({ file: "u" }))).toEqual({ port: 7878, webhook: { url: "https://chat.example/h", secret: "k".repeat(40) } });
    await expect(consoleSettings(hook({ env: "TOOLGATE_TEST_UNSET_HOOK" }))).rejects.toThrow("is not set");
  });
});
