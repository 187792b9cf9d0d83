/**
 * Adding blocks to the world: a request's children are turned into blocks and checked, nesting
 * and all, before any is stored, so a refused request changes nothing.
 */
import type { BlockObjectResponse, PartialUserObjectResponse } from "@notionhq/client";
import { blockFromRequest, MAX_CHILDREN_PER_REQUEST, newId, type BlockParent } from "./convert.js";
import { invalid } from "./errors.js";
import type { NotionWorld } from "./world.js";

/** A block made from a request, with the blocks to store under it; nothing stored yet. */
export interface PlannedBlock {
  readonly block: BlockObjectResponse;
  readonly children: readonly PlannedBlock[];
}

/** Refuse more children than one request may carry; `path` names the field in the error. */
export function checkChildCount(children: readonly unknown[], path: string): void {
  if (children.length > MAX_CHILDREN_PER_REQUEST) {
    throw invalid(`body failed validation: ${path}.length should be ≤ \`${MAX_CHILDREN_PER_REQUEST}\`, instead was \`${children.length}\`.`);
  }
}

/** Append children to a page or block, validating every one before storing any. */
export function appendChildren(
  world: NotionWorld,
  parentId: string,
  by: PartialUserObjectResponse,
  children: readonly unknown[],
  path = "body.children",
): BlockObjectResponse[] {
  checkChildCount(children, path);
  if (children.length === 0) throw invalid(`body failed validation: ${path}.length should be ≥ \`1\`, instead was \`0\`.`);
  const parent: BlockParent = world.pages.has(parentId) ? { type: "page_id", page_id: parentId } : { type: "block_id", block_id: parentId };
  const planned = planBlocks(children, parent, by, world.now(), path);
  return commitBlocks(world, parentId, planned);
}

/** Turn block requests into blocks (at most two levels of nesting), refusing the first bad one. */
export function planBlocks(
  children: readonly unknown[],
  parent: BlockParent,
  by: PartialUserObjectResponse,
  at: string,
  path: string,
  depth = 0,
): PlannedBlock[] {
  return children.map((child, index) => {
    const id = newId();
    const { block, children: nested } = blockFromRequest(child, `${path}[${index}]`, { id, parent, at, by });
    if (nested.length > 0 && depth >= 2) throw invalid(`body failed validation: ${path}[${index}] nests children more than two levels deep.`);
    if (nested.length > MAX_CHILDREN_PER_REQUEST) throw invalid(`body failed validation: ${path}[${index}].children.length should be ≤ \`100\`.`);
    return { block, children: planBlocks(nested, { type: "block_id", block_id: id }, by, at, `${path}[${index}].${block.type}.children`, depth + 1) };
  });
}

/** Store planned blocks under a page or block, in order; the blocks directly under it are returned. */
export function commitBlocks(world: NotionWorld, parentId: string, planned: readonly PlannedBlock[]): BlockObjectResponse[] {
  const holder = world.pages.get(parentId) ?? world.blocks.get(parentId);
  const created: BlockObjectResponse[] = [];
  for (const { block, children } of planned) {
    world.blocks.set(block.id, { block, children: [] });
    holder?.children.push(block.id);
    commitBlocks(world, block.id, children);
    created.push(block);
  }
  const parentBlock = world.blocks.get(parentId);
  if (parentBlock && planned.length > 0) parentBlock.block.has_children = true;
  return created;
}
