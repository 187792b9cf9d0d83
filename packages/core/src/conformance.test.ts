import { createNotesStore, createNotesTools } from "./testing/notes-family.js";
import { describeToolFamily } from "./testing/describe-tool-family.js";

// Core runs the same conformance suite every family runs, on its own test family.
const store = createNotesStore();
describeToolFamily(createNotesTools(store), {
  makeContext: () => ({ secrets: ["notes-conformance-secret"] }),
  validInputs: {
    "notes.add_note": { id: "c1", text: "hello" },
    "notes.read_note": { id: "missing-note" },
    "notes.delete_note": { id: "c1" },
    "notes.word_count": { text: "one two" },
    "notes.sync_notes": { delayMs: 5 },
  },
  invalidInputs: {
    "notes.add_note": [
      { id: "", text: "x" },
      { id: "a", text: "b", extra: true },
    ],
  },
  plantSecret: (toolId, secret) => {
    store.notes.set("planted", `the code is ${secret}`);
    return {
      "notes.add_note": { id: secret, text: "a note whose id is a secret" },
      "notes.read_note": { id: "planted" },
      "notes.delete_note": { id: secret },
      "notes.word_count": { text: `count ${secret}` },
    }[toolId];
  },
});
