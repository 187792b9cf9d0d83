import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
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
    expect(config.profiles).toEqual([{ name: "reader", allow: ["notes:read"], maxRisk: "low", consents: [], egress: [], onInjection: "flag" }]);
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
    await expect(loadJson("{not json")).rejects.toThrow(expect.objectContaining({ code: "config_invalid", message: "toolgate.config.json is not valid JSON" }));
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
