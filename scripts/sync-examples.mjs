#!/usr/bin/env node
// Copies each example file into the Markdown that shows it: a ```ts block after a
// `<!-- example: path -->` marker becomes the file's text. tests/src/readme.test.ts checks they agree.
import { readFileSync, readdirSync, writeFileSync } from "node:fs";

const root = new URL("../", import.meta.url);
const documents = [
  "README.md",
  "packages/core/README.md",
  ...readdirSync(new URL("docs/", root))
    .filter((f) => f.endsWith(".md"))
    .map((f) => `docs/${f}`),
];
let changed = 0;
for (const doc of documents) {
  const text = readFileSync(new URL(doc, root), "utf8");
  const synced = text.replace(/(<!-- example: (\S+) -->\n```ts\n)[\s\S]*?```/g, (_, head, file) => `${head}${readFileSync(new URL(file, root), "utf8")}\`\`\``);
  if (synced !== text) {
    writeFileSync(new URL(doc, root), synced);
    console.log(`synced ${doc}`);
    changed++;
  }
}
console.log(`${changed} document(s) changed`);
