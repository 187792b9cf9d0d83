import { createNotesStore, createNotesTools } from "./fixtures/notes-family.js";
import { describeToolFamily } from "./testing/describe-tool-family.js";

// Core runs the same conformance suite every family runs, on its own test family.
describeToolFamily(createNotesTools(createNotesStore()), {
  makeContext: () => ({ secrets: ["notes-conformance-secret"] }),
  validInputs: {
    "notes.add_note": { id: "c1", text: "hello" },
    "notes.read_note": { id: "missing-note" },
    "notes.delete_note": { id: "c1" },
    "notes.word_count": { text: "one two" },
    "notes.sync_notes": { delayMs: 5 },
  },
  invalidInputs: {
    "notes.add_note": [{ id: "", text: "x" }, { id: "a", text: "b", extra: true }],
  },
});
