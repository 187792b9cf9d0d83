import { describeToolFamily } from "@toolgate/core/testing";
import { createNotionTools } from "./index.js";
import { startNotionWorld, type NotionWorld } from "./fixtures/notion-world.js";

// Ids are fixed before the emulator starts: seed pages get fresh ids, so valid inputs name pages
// that each test's world looks up by title through this map.
let world: NotionWorld | undefined;
const PAGE = "00000000-0000-4000-8000-000000000001";
const DATABASE = "00000000-0000-4000-8000-000000000002";
const DATA_SOURCE = "00000000-0000-4000-8000-000000000003";

/**
 * Put `secret` where `toolId` reads it back from this test's emulator, and return the input that
 * makes it. append_blocks, archive_page and add_comment answer with Notion's UUIDs only, so the
 * emulator refuses those writes with a validation error quoting the secret, as Notion's validation
 * messages quote the value they refuse; create_page (UUID and URL only) is refused by the tool
 * itself, its error naming the database's properties, one of which carries the secret.
 */
function plantSecret(toolId: string, secret: string): unknown {
  if (!world) throw new Error("plantSecret runs after makeContext");
  const { emulator } = world;
  const shared = { sharedWith: ["agent"] };
  const refuseQuoting = (method: string, path: string, value: string): void =>
    emulator.fault({ kind: "validation_error", method, path, message: `body failed validation: the value \`${JSON.stringify(value)}\` is not accepted.` });
  const databaseWith = (property: string) =>
    emulator.seedDatabase({
      title: "Planted database",
      ...shared,
      dataSource: { properties: { Name: { type: "title" }, "Toolgate key": { type: "rich_text" }, [property]: { type: "rich_text" } } },
    });
  switch (toolId) {
    case "notion.search":
      emulator.seedPage({ title: `Planted ${secret}`, ...shared });
      return { query: "Planted" };
    case "notion.read_page":
      return {
        pageId: emulator.seedPage({ title: "Planted", ...shared, children: [{ paragraph: { rich_text: [{ text: { content: `The code is ${secret}.` } }] } }] })
          .id,
      };
    case "notion.query_database":
      emulator.seedPage({ title: `Planted ${secret}`, parent: { dataSourceId: DATA_SOURCE } });
      return { databaseId: DATABASE };
    case "notion.create_page":
      return { parent: { databaseId: databaseWith(`Code ${secret}`).databaseId }, title: "New", properties: { Missing: "x" } };
    case "notion.update_page_properties": {
      const page = emulator.seedPage({ title: "Row", parent: { dataSourceId: databaseWith(`Code ${secret}`).dataSourceId } });
      return { pageId: page.id, properties: { [`Code ${secret}`]: "x" } };
    }
    case "notion.append_blocks":
      refuseQuoting("PATCH", `/blocks/${PAGE}/children`, `https://example.com/${secret}`);
      return { pageId: PAGE, markdown: `See [the code](https://example.com/${secret})` };
    case "notion.archive_page": {
      const page = emulator.seedPage({ title: `Planted ${secret}`, ...shared });
      refuseQuoting("PATCH", `/pages/${page.id}`, `Planted ${secret}`);
      return { pageId: page.id };
    }
    case "notion.add_comment":
      refuseQuoting("POST", "/comments", `The code is ${secret}.`);
      return { pageId: PAGE, text: `The code is ${secret}.` };
    default:
      throw new Error(`no planting for ${toolId}`);
  }
}

describeToolFamily(createNotionTools({ retry: { sleep: async () => undefined } }), {
  makeContext: async () => {
    world = await startNotionWorld();
    world.emulator.seedPage({ id: PAGE, title: "Conformance page", sharedWith: ["agent"] });
    world.emulator.seedDatabase({
      id: DATABASE,
      title: "Conformance database",
      sharedWith: ["agent"],
      dataSource: { id: DATA_SOURCE, properties: { Name: { type: "title" }, "Toolgate key": { type: "rich_text" }, Done: { type: "checkbox" } } },
    });
    const current = world;
    return { connectors: current.connectors, secrets: current.secrets, cleanup: () => current.close() };
  },
  validInputs: {
    "notion.search": { query: "Conformance" },
    "notion.read_page": { pageId: PAGE },
    "notion.query_database": { databaseId: DATABASE },
    "notion.create_page": { parent: { databaseId: DATABASE }, title: "New", properties: { Done: true }, markdown: "# Hello\n\n- a\n- b" },
    "notion.append_blocks": { pageId: PAGE, markdown: "Some **text**" },
    "notion.update_page_properties": { pageId: PAGE, properties: { title: "Renamed" } },
    "notion.archive_page": { pageId: PAGE },
    "notion.add_comment": { pageId: PAGE, text: "Looks good" },
  },
  invalidInputs: {
    "notion.read_page": [{ pageId: "not-an-id" }],
    "notion.query_database": [{ databaseId: DATABASE, dataSourceId: DATA_SOURCE }],
    "notion.update_page_properties": [{ pageId: PAGE, properties: {} }],
  },
  plantSecret,
});
