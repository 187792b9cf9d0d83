/**
 * `/v1/blocks`: read a block, list and append its children, edit its content, move it to the
 * trash and back. A page is a block too; as one it reads as its `child_page` block.
 */
import type { AppendBlockChildrenResponse, BlockObjectResponse, ListBlockChildrenResponse } from "@notionhq/client";
import { isRecord } from "../../is-record.js";
import type { Caller } from "../caller.js";
import { blockFromRequest } from "../convert.js";
import { archived, invalid } from "../errors.js";
import { childPageBlock } from "../page-operations.js";
import type { StoredBlock, StoredPage } from "../world-model.js";
import type { NotionWorld } from "../world.js";
import { paginateQuery, requestedTrash, type NotionRoute } from "./route.js";

export function blockRoutes(world: NotionWorld): NotionRoute[] {
  return [
    {
      method: "GET",
      pattern: /^\/blocks\/([^/]+)\/children$/,
      capability: "read_content",
      handle: (caller, [id], _body, query) => {
        const holder = world.block(caller.integration.id, id!);
        const blocks = holder.children.map((childId) => world.blocks.get(childId)!.block);
        const response: ListBlockChildrenResponse = { object: "list", type: "block", block: {}, ...paginateQuery(blocks, query) };
        return response;
      },
    },
    {
      method: "PATCH",
      pattern: /^\/blocks\/([^/]+)\/children$/,
      capability: "insert_content",
      handle: (caller, [id], body) => {
        const holder = world.block(caller.integration.id, id!);
        const target = "page" in holder ? holder.page : holder.block;
        if (target.in_trash) throw archived();
        if (!Array.isArray(body["children"])) throw invalid("body failed validation: body.children should be defined, instead was `undefined`.");
        const created = world.appendChildren(target.id, caller.by, body["children"] as unknown[]);
        const response: AppendBlockChildrenResponse = { object: "list", type: "block", block: {}, next_cursor: null, has_more: false, results: created };
        return response;
      },
    },
    {
      method: "GET",
      pattern: /^\/blocks\/([^/]+)$/,
      capability: "read_content",
      handle: (caller, [id]) => blockOf(world, world.block(caller.integration.id, id!)),
    },
    {
      method: "PATCH",
      pattern: /^\/blocks\/([^/]+)$/,
      capability: "update_content",
      handle: (caller, [id], body) => {
        const holder = world.block(caller.integration.id, id!);
        const trash = requestedTrash(body);
        if ("page" in holder) return edited(world, caller, holder, trash);
        const block = holder.block;
        if (block.in_trash && trash !== false) throw archived();
        if (isRecord(body[block.type])) {
          const { block: next } = blockFromRequest({ type: block.type, [block.type]: body[block.type] }, "body", {
            id: block.id,
            parent: block.parent,
            at: world.now(),
            by: caller.by,
          });
          holder.block = { ...next, created_time: block.created_time, created_by: block.created_by, has_children: block.has_children };
        } else if (trash === undefined) {
          throw invalid(`body failed validation: body.${block.type} should be defined, instead was \`undefined\`.`);
        }
        return edited(world, caller, holder, trash);
      },
    },
    {
      method: "DELETE",
      pattern: /^\/blocks\/([^/]+)$/,
      capability: "update_content",
      handle: (caller, [id]) => edited(world, caller, world.block(caller.integration.id, id!), true),
    },
  ];
}

/** A block, or a page as the block it is. */
function blockOf(world: NotionWorld, stored: StoredBlock | StoredPage): BlockObjectResponse {
  if (!("page" in stored)) return stored.block;
  return world.blocks.get(stored.page.id)?.block ?? childPageBlock(stored.page, stored.children.length > 0);
}

/** Finish an edit: into or out of the trash when `trash` is a boolean, stamped as edited now. */
function edited(world: NotionWorld, caller: Caller, holder: StoredBlock | StoredPage, trash: unknown): BlockObjectResponse {
  if ("page" in holder) {
    if (typeof trash === "boolean") world.updatePage(holder, caller.by, undefined, trash);
    return blockOf(world, holder);
  }
  if (typeof trash === "boolean") {
    holder.block.in_trash = trash;
    holder.block.archived = trash;
  }
  holder.block.last_edited_time = world.now();
  return holder.block;
}
