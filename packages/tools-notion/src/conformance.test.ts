import { describeToolFamily } from "@toolgate/core/testing";
import { createNotionTools } from "./index.js";
import { startNotionWorld, type NotionWorld } from "./fixtures/notion-world.js";

// Ids are fixed before the emulator starts: seed pages get fresh ids, so valid inputs name pages
// that each test's world looks up by title through this map.
let world: NotionWorld | undefined;
const PAGE = "00000000-0000-4000-8000-000000000001";

describeToolFamily(createNotionTools({ sleep: async () => undefined }), {
  makeContext: async () => {
    world = await startNotionWorld();
    world.emulator.seedPage({ id: PAGE, title: "Conformance page", sharedWith: ["agent"] });
    world.emulator.seedDatabase({
      id: "00000000-0000-4000-8000-000000000002",
      title: "Conformance database",
      sharedWith: ["agent"],
      dataSource: { id: "00000000-0000-4000-8000-000000000003", properties: { Name: { type: "title" }, "Toolgate key": { type: "rich_text" }, Done: { type: "checkbox" } } },
    });
    const current = world;
    return { connectors: current.connectors, secrets: current.secrets, cleanup: () => current.close() };
  },
  validInputs: {
    "notion.search": { query: "Conformance" },
    "notion.read_page": { pageId: PAGE },
    "notion.query_database": { databaseId: "00000000-0000-4000-8000-000000000002" },
    "notion.create_page": { parent: { databaseId: "00000000-0000-4000-8000-000000000002" }, title: "New", properties: { Done: true }, markdown: "# Hello\n\n- a\n- b" },
    "notion.append_blocks": { pageId: PAGE, markdown: "Some **text**" },
    "notion.update_page_properties": { pageId: PAGE, properties: { title: "Renamed" } },
    "notion.archive_page": { pageId: PAGE },
    "notion.add_comment": { pageId: PAGE, text: "Looks good" },
  },
  invalidInputs: {
    "notion.read_page": [{ pageId: "not-an-id" }],
    "notion.query_database": [{ databaseId: "00000000-0000-4000-8000-000000000002", dataSourceId: "00000000-0000-4000-8000-000000000003" }],
    "notion.update_page_properties": [{ pageId: PAGE, properties: {} }],
  },
});
