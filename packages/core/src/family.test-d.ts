import { expectTypeOf, it } from "vitest";
import { createNotesStore, createNotesTools } from "./testing/notes-family.js";
import { defineFamily, type ToolFamily } from "./family.js";

it("infers the family's types from its schema, with name, tools and tokens as given", () => {
  const notes = createNotesTools(createNotesStore());
  const family = defineFamily({ name: "notes", tools: notes.tools, permissions: ["notes:read", "notes:write"], kind: "in-process" });
  expectTypeOf(family.name).toEqualTypeOf<"notes">();
  expectTypeOf(family.tools).toEqualTypeOf(notes.tools);
  expectTypeOf(family.permissions).toEqualTypeOf<readonly ("notes:read" | "notes:write")[]>();
  expectTypeOf<ToolFamily["kind"]>().toEqualTypeOf<"in-process" | "process" | undefined>();
  expectTypeOf<ToolFamily["description"]>().toEqualTypeOf<string | undefined>();
  // @ts-expect-error an unknown kind
  defineFamily({ name: "notes", tools: notes.tools, permissions: ["notes:read"], kind: "remote" });
});
