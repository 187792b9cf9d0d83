/** Every Notion API route the emulator answers, gathered in matching order. */
import type { NotionWorld } from "../world.js";
import { blockRoutes } from "./blocks.js";
import { commentRoutes } from "./comments.js";
import { dataSourceRoutes } from "./data-sources.js";
import { pageRoutes } from "./pages.js";
import type { NotionRoute } from "./route.js";
import { searchRoutes } from "./search.js";
import { userRoutes } from "./users.js";

export function notionRoutes(world: NotionWorld): NotionRoute[] {
  return [...userRoutes(world), ...searchRoutes(world), ...pageRoutes(world), ...blockRoutes(world), ...dataSourceRoutes(world), ...commentRoutes(world)];
}
