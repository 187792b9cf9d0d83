// The composition this repository documents: every family with the options the demo uses.
// `toolgate docs --out docs/tools` renders docs/tools/*.md from it; CI runs `toolgate docs --check`.
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { defineProfile } from "@toolgate/core";
import { createConnectorRuntime, createMemoryVault } from "@toolgate/core/connectors";
import { createGoogleConnector } from "@toolgate/connector-google";
import { createNotionConnector } from "@toolgate/connector-notion";
import { startToolProcess } from "@toolgate/process";
import { createCalendarTools } from "@toolgate/tools-calendar";
import { createGmailTools, SEND_CONSENT } from "@toolgate/tools-gmail";
import { createNotionTools, NOTION_WRITE_CONSENT } from "@toolgate/tools-notion";
import { createRepoTools } from "@toolgate/tools-repo";

export default {
  // The journal, audit key and grants live in the state directory: by default outside this project
  // ($XDG_STATE_HOME/toolgate/<project>-<hash>), so outside the repo family's root, and protected
  // wherever it is (`toolgate inventory` prints it).
  // The token vault (`toolgate connections …`): an encrypted file in the state directory, its key in
  // TOOLGATE_VAULT_KEY (32 bytes, base64 or hex), never beside it. Without the variable there is no
  // vault and every connected tool fails closed; docs/operating.md shows how to make a key.
  ...(process.env.TOOLGATE_VAULT_KEY ? { vault: { key: { env: "TOOLGATE_VAULT_KEY" } } } : {}),
  profiles: [
    defineProfile({ name: "reader", allow: ["repo:read", "gmail:read", "calendar:read", "notion:read"], maxRisk: "low" }),
    defineProfile({
      name: "assistant",
      allow: [
        "repo:read",
        "repo:check",
        "verifier:command",
        "gmail:read",
        "gmail:compose",
        "gmail:send",
        "calendar:read",
        "calendar:write",
        "notion:read",
        "notion:write",
        "notion:comment",
        "textstats:text-read",
        "textstats:units-convert",
      ],
      maxRisk: "high",
      consents: [SEND_CONSENT, NOTION_WRITE_CONSENT],
      egress: ["personal"],
      // A runaway agent stops here, on every worker sharing the journal (`toolgate budgets` shows the counts).
      limits: [
        { name: "sends", tools: ["gmail.send_message", "gmail.send_draft"], per: "principal", max: 20, windowMs: 86_400_000 },
        { name: "calls", tools: "*", per: "tenant", max: 600, windowMs: 60_000 },
      ],
    }),
  ],
  async compose({ baseDir, vault }) {
    // The interpreter's own file, not a version manager's shim on PATH: the sandbox binds only what
    // the program needs, and a shim needs the manager's whole tree. The system's first, where there is one.
    const python = existsSync("/usr/bin/python3")
      ? "/usr/bin/python3"
      : execFileSync("python3", ["-c", "import sys; print(sys.executable)"], { encoding: "utf8" }).trim();
    const textstats = await startToolProcess({
      name: "textstats",
      command: python,
      args: [`${baseDir}/examples/python-tool/textstats_tool.py`],
      // Its own directory, bound read-only: what it sees does not depend on where toolgate is run from.
      cwd: `${baseDir}/examples/python-tool`,
      expectedScopes: { word_count: "text:read", convert_length: "units:convert", slow_count: "text:read" },
      tools: { word_count: { effect: "read", risk: "low" }, convert_length: { effect: "none", risk: "low" }, slow_count: { effect: "read", risk: "low" } },
    });
    // The tool process is running: if anything below fails, stop it, or the command would never exit.
    try {
      return {
        families: [
          createRepoTools({
            root: baseDir,
            checks: { syntax: { argv: ["node", "--check", "scripts/demo.mjs"], description: "syntax check of the demo script" } },
          }),
          createGmailTools({ recipientAllowlist: ["@example.test"] }),
          createCalendarTools(),
          createNotionTools(),
          textstats.family,
        ],
        // Connections come from the vault named above (none without TOOLGATE_VAULT_KEY): tools fail closed without one.
        connectors: createConnectorRuntime({
          vault: vault ?? createMemoryVault(),
          providers: [
            createGoogleConnector({ clientId: process.env.GOOGLE_CLIENT_ID ?? "unset", clientSecret: process.env.GOOGLE_CLIENT_SECRET ?? "unset" }),
            createNotionConnector(),
          ],
        }),
        // `toolgate connections connect google|notion` signs in through these OAuth clients (register a
        // desktop client with the redirect URI http://127.0.0.1/callback); without them it says what to set.
        oauthClients: [
          ...(process.env.GOOGLE_CLIENT_ID && process.env.GOOGLE_CLIENT_SECRET
            ? [{ provider: "google", clientId: process.env.GOOGLE_CLIENT_ID, clientSecret: process.env.GOOGLE_CLIENT_SECRET }]
            : []),
          ...(process.env.NOTION_CLIENT_ID && process.env.NOTION_CLIENT_SECRET
            ? [{ provider: "notion", clientId: process.env.NOTION_CLIENT_ID, clientSecret: process.env.NOTION_CLIENT_SECRET }]
            : []),
        ],
        close: () => textstats.stop(),
      };
    } catch (error) {
      await textstats.stop();
      throw error;
    }
  },
};
