import { applyPatch, formatPatch, parsePatch as parseUnifiedDiff, structuredPatch, type StructuredPatch } from "diff";
import { ToolError } from "@toolgate/core";

/** Beyond this many edits, the diff is shown as the whole old text replaced by the whole new one. */
const MAX_EDITS = 2000;
/** The regular file modes a patch may create or delete; links (120000) and submodules (160000) are refused. */
const FILE_MODES: ReadonlySet<string> = new Set(["100644", "100755"]);

const sideName = (path: string, text: string | null, prefix: "a/" | "b/") => (text === null ? "/dev/null" : `${prefix}${path}`);

/**
 * The library's patch of one file, with git's header (creations and deletions marked). Beyond
 * `MAX_EDITS` edits the library gives up, and the change is the whole old text removed and the whole
 * new text added (each side again the library's patch against an empty text).
 */
function filePatch(path: string, before: string | null, after: string | null, context: number): StructuredPatch {
  const oldName = sideName(path, before, "a/");
  const newName = sideName(path, after, "b/");
  const patch =
    structuredPatch(oldName, newName, before ?? "", after ?? "", undefined, undefined, { context, maxEditLength: MAX_EDITS }) ??
    replacement(oldName, newName, before ?? "", after ?? "");
  return {
    ...patch,
    isGit: true,
    ...(before === null ? { isCreate: true, newMode: "100644" } : {}),
    ...(after === null ? { isDelete: true, oldMode: "100644" } : {}),
  };
}

function replacement(oldName: string, newName: string, before: string, after: string): StructuredPatch {
  const [gone] = structuredPatch(oldName, newName, before, "", undefined, undefined, { context: 0 }).hunks;
  const [come] = structuredPatch(oldName, newName, "", after, undefined, undefined, { context: 0 }).hunks;
  const hunk =
    gone && come ? { oldStart: 1, oldLines: gone.oldLines, newStart: 1, newLines: come.newLines, lines: [...gone.lines, ...come.lines] } : (gone ?? come);
  return { oldFileName: oldName, newFileName: newName, oldHeader: undefined, newHeader: undefined, hunks: hunk ? [hunk] : [] };
}

/** How many lines were added and removed between two texts. */
export function lineStat(before: string | null, after: string | null): { added: number; removed: number } {
  let added = 0;
  let removed = 0;
  for (const hunk of filePatch("f", before, after, 0).hunks)
    for (const line of hunk.lines) {
      if (line.startsWith("+")) added++;
      else if (line.startsWith("-")) removed++;
    }
  return { added, removed };
}

/**
 * A unified diff of one file, git-style headers, three lines of context. `null` means the file
 * does not exist on that side. Empty when nothing changes.
 */
export function unifiedDiff(path: string, before: string | null, after: string | null, context = 3): string {
  if (before === after) return "";
  return formatPatch(filePatch(path, before, after, context));
}

// ---------- parsing and applying a patch ----------

/** One file's part of a patch. `oldPath`/`newPath` are null for `/dev/null`. */
export interface FilePatch {
  readonly oldPath: string | null;
  readonly newPath: string | null;
  /** The library's parse of this file's part, as `applyFilePatch` applies it. */
  readonly patch: StructuredPatch;
}

const bad = (why: string) => new ToolError("invalid_input", `the patch cannot be used: ${why}`, { details: { reason: "patch_unsupported" } });

/** Lines outside hunk bodies that the library would read (or skip as commentary) but that are refused here. */
const REFUSED_LINES: readonly (readonly [RegExp, string])[] = [
  [/^(rename|copy) (from|to) |^(dis)?similarity index /, "renames and copies are not supported"],
  [/^(old|new) mode /, "mode changes are not supported"],
  [/^GIT binary patch|^Binary files /, "binary patches are not supported"],
  [/^diff --(cc|combined) |^@@@/, "combined diffs are not supported"],
  [/^(---|\+\+\+)\s+"|^diff --git .*"/, "quoted file names are not supported"],
  [/^(---|\+\+\+)\s.*\\\\/, "escaped file names are not supported"],
];

/**
 * Check the lines outside hunk bodies. The library's own hunks say where the bodies are: each `@@ `
 * line outside a body opens the next parsed hunk, whose lines follow it.
 */
function refuseHeaders(lines: readonly string[], parsed: readonly StructuredPatch[]): void {
  const hunks = parsed.flatMap((p) => p.hunks);
  let next = 0;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    if (/^@@\s/.test(line)) {
      i += hunks[next++]?.lines.length ?? 0;
      continue;
    }
    for (const [pattern, why] of REFUSED_LINES) if (pattern.test(line)) throw bad(why);
  }
}

function headerPath(name: string | undefined, prefix: "a/" | "b/"): string | null {
  if (name === undefined) throw bad("a hunk appears before any file header");
  if (name === "/dev/null") return null;
  if (name.length === 0) throw bad("a file header names no file");
  if (/[\x00-\x1f\x7f]/.test(name)) throw bad("a file name holds a control character");
  return name.startsWith(prefix) ? name.slice(2) : name;
}

function checkFile(patch: StructuredPatch): FilePatch {
  if (patch.isRename || patch.isCopy) throw bad("renames and copies are not supported");
  if (patch.isBinary) throw bad("binary patches are not supported");
  for (const mode of [patch.oldMode, patch.newMode])
    if (mode !== undefined && !FILE_MODES.has(mode)) throw bad(`file mode ${mode} (links and submodules) is not supported`);
  if (patch.isCreate && patch.isDelete) throw bad("a file is both created and deleted");
  // Without `---`/`+++` lines the names come from `diff --git`, which never says /dev/null.
  const fromGitHeader = patch.oldHeader === undefined;
  let oldPath = headerPath(patch.oldFileName, "a/");
  let newPath = headerPath(patch.newFileName, "b/");
  if (patch.isCreate && oldPath !== null) {
    if (!fromGitHeader) throw bad("a created file's old side is not /dev/null");
    oldPath = null;
  }
  if (patch.isDelete && newPath !== null) {
    if (!fromGitHeader) throw bad("a deleted file's new side is not /dev/null");
    newPath = null;
  }
  if (oldPath === null && newPath === null) throw bad("a file goes from /dev/null to /dev/null");
  if (oldPath !== null && newPath !== null && oldPath !== newPath) throw bad("renames are not supported");
  for (const h of patch.hunks)
    if (![h.oldStart, h.oldLines, h.newStart, h.newLines].every((n) => Number.isSafeInteger(n) && n >= 0)) throw bad("a hunk header is malformed");
  if (patch.hunks.length === 0 && !patch.isCreate && !patch.isDelete) throw bad(`file ${JSON.stringify(newPath ?? oldPath)} has no hunks`);
  return { oldPath, newPath, patch };
}

/**
 * Parse a unified diff (plain or git-style) with the library. Refused with `invalid_input`: renames,
 * copies, mode changes, symbolic links, submodules, binary and combined patches, quoted or escaped
 * names, names with control characters, hunks whose line counts do not add up, and the same file twice.
 */
export function parsePatch(patch: string): FilePatch[] {
  let parsed: StructuredPatch[];
  try {
    parsed = parseUnifiedDiff(patch);
  } catch (error) {
    throw bad(error instanceof Error ? error.message.slice(0, 200) : "it is malformed");
  }
  refuseHeaders(patch.split("\n"), parsed);
  // A part with no names and no hunks is commentary only.
  const parts = parsed.filter((p) => p.oldFileName !== undefined || p.newFileName !== undefined || p.hunks.length > 0);
  const files: FilePatch[] = [];
  for (const part of parts) {
    const file = checkFile(part);
    const name = file.newPath ?? file.oldPath;
    if (files.some((f) => (f.newPath ?? f.oldPath) === name)) throw bad(`file ${JSON.stringify(name)} appears twice`);
    files.push(file);
  }
  if (files.length === 0) throw bad("it holds no file changes");
  return files;
}

/**
 * Apply one file's hunks to its current text (`null`: the file does not exist) with the library, no
 * fuzz and no line-ending conversion: each hunk must match exactly, at its stated line or shifted,
 * after the previous hunk; otherwise `conflict`. Returns the new text, or `null` when the file is deleted.
 */
export function applyFilePatch(file: FilePatch, current: string | null): string | null {
  const name = file.newPath ?? file.oldPath ?? "";
  if (file.oldPath === null && current !== null) throw new ToolError("conflict", `the patch creates ${JSON.stringify(name)}, which already exists`);
  if (file.oldPath !== null && current === null) throw new ToolError("conflict", `the patch changes ${JSON.stringify(name)}, which does not exist`);
  let text: string | false;
  try {
    text = applyPatch(current ?? "", file.patch, { autoConvertLineEndings: false });
  } catch {
    text = false;
  }
  if (text === false) throw new ToolError("conflict", `a hunk of ${JSON.stringify(name)} does not match the file's current content`);
  if (file.newPath === null) {
    if (text !== "") throw new ToolError("conflict", `the patch deletes ${JSON.stringify(name)}, but lines would remain`);
    return null;
  }
  return text;
}

/** The path a `diff --git` header names, read by the library (renames are off, so both sides are one path); undefined when it cannot be read. */
export function diffHeaderPath(header: string): string | undefined {
  if (!header.startsWith("diff --git ") || header.includes("\n")) return undefined;
  let parsed: StructuredPatch | undefined;
  try {
    [parsed] = parseUnifiedDiff(header);
  } catch {
    return undefined;
  }
  const a = parsed?.oldFileName;
  const b = parsed?.newFileName;
  if (!a?.startsWith("a/") || !b?.startsWith("b/") || a.slice(2) !== b.slice(2) || a.length <= 2) return undefined;
  return a.slice(2);
}

/**
 * Drop the sections of a `git diff` whose file `hidden` says is off limits; a section whose header
 * cannot be read is dropped too (fail closed). Returns the rest and how many sections went.
 */
export function withoutHiddenFiles(diff: string, hidden: (relative: string) => boolean): { text: string; skipped: number } {
  // At a line's start only: with the m flag `^` also matches after a CR or U+2028 inside a line.
  const sections = diff.split(/(?<![^\n])(?=diff --git )/);
  let skipped = 0;
  const kept = sections.filter((section) => {
    if (!section.startsWith("diff --git ")) return true;
    const file = diffHeaderPath(section.slice(0, section.indexOf("\n") >= 0 ? section.indexOf("\n") : undefined));
    if (file !== undefined && !hidden(file)) return true;
    skipped++;
    return false;
  });
  return { text: kept.join(""), skipped };
}
