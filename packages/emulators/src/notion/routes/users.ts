/** `GET /v1/users/me`: the bot user of the calling integration. */
import type { GetSelfResponse } from "@notionhq/client";
import type { NotionWorld } from "../world.js";
import type { NotionRoute } from "./route.js";

export function userRoutes(world: NotionWorld): NotionRoute[] {
  return [
    {
      method: "GET",
      pattern: /^\/users\/me$/,
      capability: undefined,
      handle: (caller) => {
        const self: GetSelfResponse = {
          object: "user",
          id: caller.integration.botId,
          name: caller.integration.name,
          avatar_url: null,
          type: "bot",
          bot: {
            owner: { type: "workspace", workspace: true },
            workspace_name: world.workspaceName,
            workspace_id: world.workspaceId,
            workspace_limits: { max_file_upload_size_in_bytes: 5_242_880 },
          },
        };
        return self;
      },
    },
  ];
}
