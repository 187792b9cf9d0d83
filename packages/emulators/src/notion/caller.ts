/** Who a request comes from: the `Notion-Version` it speaks and the integration its bearer token names. */
import type { IncomingHttpHeaders } from "node:http";
import type { PartialUserObjectResponse } from "@notionhq/client";
import { NotionApiError } from "./errors.js";
import type { NotionIntegration } from "./world-model.js";
import type { NotionWorld } from "./world.js";

/** The Notion-Version values the emulator accepts. */
export const NOTION_VERSIONS = ["2022-06-28", "2025-09-03", "2026-03-11"] as const;

/** The integration a request acts as, and the bot user its edits are stamped with. */
export interface Caller {
  readonly integration: NotionIntegration;
  readonly by: PartialUserObjectResponse;
}

/** The caller of an API request; a missing or unknown version, or a bad or revoked token, is refused. */
export function identifyCaller(headers: IncomingHttpHeaders, world: NotionWorld): Caller {
  const version = headers["notion-version"];
  if (typeof version !== "string" || version === "") {
    throw new NotionApiError("missing_version", "Notion-Version header failed validation: Notion-Version header should be defined, instead was `undefined`.");
  }
  if (!(NOTION_VERSIONS as readonly string[]).includes(version)) {
    throw new NotionApiError(
      "validation_error",
      `Notion-Version header failed validation: ${JSON.stringify(version).slice(0, 40)} is not a supported version.`,
    );
  }
  const bearer = /^Bearer\s+(.+)$/i.exec(headers.authorization ?? "")?.[1]?.trim();
  const token = bearer === undefined ? undefined : world.tokens.get(bearer);
  const integration = token && !token.revoked ? world.integrations.get(token.integrationId) : undefined;
  if (!integration) throw new NotionApiError("unauthorized", "API token is invalid.");
  return { integration, by: world.bot(integration.id) };
}
