/** `/v1/comments`: list the comments on a page or block, and add one (a new discussion or a reply). */
import { randomUUID } from "node:crypto";
import type { CommentObjectResponse, ListCommentsResponse } from "@notionhq/client";
import { isRecord } from "../../is-record.js";
import { normalizeId, richTextFromRequest, textRich } from "../convert.js";
import { invalid, notFound } from "../errors.js";
import type { NotionWorld } from "../world.js";
import { paginateQuery, type NotionRoute } from "./route.js";

export function commentRoutes(world: NotionWorld): NotionRoute[] {
  return [
    {
      method: "GET",
      pattern: /^\/comments$/,
      capability: "read_comments",
      handle: (caller, _params, _body, query) => {
        const blockId = query.get("block_id");
        if (!blockId) throw invalid("query failed validation: block_id should be defined, instead was `undefined`.");
        const holder = world.block(caller.integration.id, blockId);
        const id = "page" in holder ? holder.page.id : holder.block.id;
        const comments = world.comments.filter((c) => (c.parent.type === "page_id" ? c.parent.page_id : c.parent.block_id) === id);
        const response: ListCommentsResponse = { object: "list", type: "comment", comment: {}, ...paginateQuery(comments, query) };
        return response;
      },
    },
    {
      method: "POST",
      pattern: /^\/comments$/,
      capability: "insert_comments",
      handle: (caller, _params, body) => {
        let parent: CommentObjectResponse["parent"];
        let discussionId: string;
        if (typeof body["discussion_id"] === "string") {
          const existing = world.comments.find((c) => c.discussion_id === normalizeId(body["discussion_id"] as string));
          if (!existing) throw notFound("comment", body["discussion_id"]);
          parent = existing.parent;
          discussionId = existing.discussion_id;
        } else if (isRecord(body["parent"]) && (typeof body["parent"]["page_id"] === "string" || typeof body["parent"]["block_id"] === "string")) {
          const raw = (body["parent"]["page_id"] ?? body["parent"]["block_id"]) as string;
          const holder = world.block(caller.integration.id, raw);
          parent = "page" in holder ? { type: "page_id", page_id: holder.page.id } : { type: "block_id", block_id: holder.block.id };
          discussionId = randomUUID();
        } else {
          throw invalid("body failed validation: body.parent or body.discussion_id should be defined.");
        }
        const richText = typeof body["markdown"] === "string" ? textRich(body["markdown"]) : richTextFromRequest(body["rich_text"], "body.rich_text");
        if (richText.length === 0) throw invalid("body failed validation: body.rich_text should not be empty.");
        const at = world.now();
        const comment: CommentObjectResponse = {
          object: "comment",
          id: randomUUID(),
          parent,
          discussion_id: discussionId,
          created_time: at,
          last_edited_time: at,
          created_by: caller.by,
          rich_text: richText,
          display_name: { type: "integration", resolved_name: caller.integration.name },
        };
        world.comments.push(comment);
        return comment;
      },
    },
  ];
}
