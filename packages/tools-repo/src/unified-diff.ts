import { ToolError } from "@toolgate/core";
import { splitLines } from "./text.js";

type Op = { readonly kind: " " | "-" | "+"; readonly line: string };

/** Beyond this many edits, the diff is shown as the whole old text replaced by the whole new one. */
const MAX_EDITS = 2000;

/** Myers' O(ND) line diff, common prefix and suffix trimmed first. */
function diffLines(a: readonly string[], b: readonly string[]): Op[] {
  let start = 0;
  while (start < a.length && start < b.length && a[start] === b[start]) start++;
  let endA = a.length;
  let endB = b.length;
  while (endA > start && endB > start && a[endA - 1] === b[endB - 1]) {
    endA--;
    endB--;
  }
  const head: Op[] = a.slice(0, start).map((line) => ({ kind: " ", line }));
  const tail: Op[] = a.slice(endA).map((line) => ({ kind: " ", line }));
  const x0 = a.slice(start, endA);
  const y0 = b.slice(start, endB);
  return [...head, ...middle(x0, y0), ...tail];
}

function middle(a: readonly string[], b: readonly string[]): Op[] {
  const n = a.length;
  const m = b.length;
  const replaceAll = (): Op[] => [...a.map((line): Op => ({ kind: "-", line })), ...b.map((line): Op => ({ kind: "+", line }))];
  if (n === 0 || m === 0) return replaceAll();
  const max = Math.min(n + m, MAX_EDITS);
  // trace[d][k + d] is the furthest x on diagonal k after d edits.
  const trace: Int32Array[] = [];
  let previous = new Int32Array([0]);
  const at = (v: Int32Array, d: number, k: number): number => v[k + d] ?? -1;
  let found = -1;
  for (let d = 0; d <= max && found < 0; d++) {
    const v = new Int32Array(2 * d + 1);
    for (let k = -d; k <= d; k += 2) {
      let x: number;
      if (d === 0) x = 0;
      else if (k === -d || (k !== d && at(previous, d - 1, k - 1) < at(previous, d - 1, k + 1))) x = at(previous, d - 1, k + 1);
      else x = at(previous, d - 1, k - 1) + 1;
      let y = x - k;
      while (x < n && y < m && a[x] === b[y]) {
        x++;
        y++;
      }
      v[k + d] = x;
      if (x >= n && y >= m) found = d;
    }
    trace.push(v);
    previous = v;
  }
  if (found < 0) return replaceAll();
  const ops: Op[] = [];
  let x = n;
  let y = m;
  for (let d = found; d > 0; d--) {
    const prev = trace[d - 1]!;
    const k = x - y;
    const down = k === -d || (k !== d && at(prev, d - 1, k - 1) < at(prev, d - 1, k + 1));
    const prevK = down ? k + 1 : k - 1;
    const prevX = at(prev, d - 1, prevK);
    const prevY = prevX - prevK;
    while (x > prevX && y > prevY) {
      ops.push({ kind: " ", line: a[x - 1]! });
      x--;
      y--;
    }
    if (down) {
      ops.push({ kind: "+", line: b[y - 1]! });
      y--;
    } else {
      ops.push({ kind: "-", line: a[x - 1]! });
      x--;
    }
  }
  while (x > 0 && y > 0) {
    ops.push({ kind: " ", line: a[x - 1]! });
    x--;
    y--;
  }
  return ops.reverse();
}

function render(op: Op): string {
  return op.line.endsWith("\n") ? `${op.kind}${op.line}` : `${op.kind}${op.line}\n\\ No newline at end of file\n`;
}

/** How many lines were added and removed between two texts. */
export function lineStat(before: string | null, after: string | null): { added: number; removed: number } {
  const ops = diffLines(splitLines(before ?? ""), splitLines(after ?? ""));
  return { added: ops.filter((o) => o.kind === "+").length, removed: ops.filter((o) => o.kind === "-").length };
}

/**
 * A unified diff of one file, git-style headers, three lines of context. `null` means the file
 * does not exist on that side. Empty when nothing changes.
 */
export function unifiedDiff(path: string, before: string | null, after: string | null, context = 3): string {
  if (before === after) return "";
  const ops = diffLines(splitLines(before ?? ""), splitLines(after ?? ""));
  let out = `diff --git a/${path} b/${path}\n`;
  if (before === null) out += "new file mode 100644\n";
  if (after === null) out += "deleted file mode 100644\n";
  out += `--- ${before === null ? "/dev/null" : `a/${path}`}\n+++ ${after === null ? "/dev/null" : `b/${path}`}\n`;
  const changed = ops.map((o, i) => (o.kind === " " ? -1 : i)).filter((i) => i >= 0);
  if (changed.length === 0) return out; // same lines, only the existence differs (an empty file)
  let i = 0;
  while (i < changed.length) {
    let last = changed[i]!;
    let j = i;
    while (j + 1 < changed.length && changed[j + 1]! - last <= 2 * context + 1) last = changed[++j]!;
    const from = Math.max(0, changed[i]! - context);
    const to = Math.min(ops.length, last + context + 1);
    let oldLine = 0;
    let newLine = 0;
    for (let k = 0; k < from; k++) {
      if (ops[k]!.kind !== "+") oldLine++;
      if (ops[k]!.kind !== "-") newLine++;
    }
    const slice = ops.slice(from, to);
    const oldLen = slice.filter((o) => o.kind !== "+").length;
    const newLen = slice.filter((o) => o.kind !== "-").length;
    const range = (line: number, length: number) => (length === 1 ? `${line + 1}` : `${length === 0 ? line : line + 1},${length}`);
    out += `@@ -${range(oldLine, oldLen)} +${range(newLine, newLen)} @@\n`;
    out += slice.map(render).join("");
    i = j + 1;
  }
  return out;
}

// ---------- parsing and applying a patch ----------

export interface PatchHunk {
  readonly oldStart: number;
  readonly oldLines: readonly string[];
  readonly newLines: readonly string[];
}

/** One file's part of a patch. `oldPath`/`newPath` are null for `/dev/null`. */
export interface FilePatch {
  readonly oldPath: string | null;
  readonly newPath: string | null;
  readonly hunks: readonly PatchHunk[];
}

const bad = (why: string) => new ToolError("invalid_input", `the patch cannot be used: ${why}`, { details: { reason: "patch_unsupported" } });

function headerPath(raw: string, prefix: "a/" | "b/"): string | null {
  const value = raw.replace(/\t.*$/, "").replace(/\r$/, "");
  if (value === "/dev/null") return null;
  if (value.startsWith('"')) throw bad("quoted file names are not supported");
  if (value.length === 0) throw bad("a file header names no file");
  return value.startsWith(prefix) ? value.slice(2) : value;
}

/**
 * Parse a unified diff (plain or git-style). Refused with `invalid_input`: renames, copies, mode
 * changes, symbolic links, binary patches, quoted names, hunks whose line counts do not add up,
 * and the same file twice.
 */
export function parsePatch(patch: string): FilePatch[] {
  const lines = patch.split("\n");
  if (lines.at(-1) === "") lines.pop();
  const files: FilePatch[] = [];
  let i = 0;
  let pendingMode: string | undefined;
  while (i < lines.length) {
    const line = lines[i]!;
    if (line.startsWith("diff --git ")) {
      pendingMode = undefined;
      i++;
      continue;
    }
    if (/^(rename|copy) (from|to) |^similarity index |^dissimilarity index /.test(line)) throw bad("renames and copies are not supported");
    if (/^(old|new) mode /.test(line)) throw bad("mode changes are not supported");
    if (line.startsWith("GIT binary patch") || /^Binary files .* differ$/.test(line)) throw bad("binary patches are not supported");
    const mode = /^(?:new|deleted) file mode (\d+)/.exec(line);
    if (mode) {
      pendingMode = mode[1];
      if (pendingMode !== "100644" && pendingMode !== "100755") throw bad(`file mode ${pendingMode} (links and submodules) is not supported`);
      i++;
      continue;
    }
    if (!line.startsWith("--- ")) {
      if (line.startsWith("@@")) throw bad("a hunk appears before any file header");
      i++; // commentary, `index` lines
      continue;
    }
    const next = lines[i + 1];
    if (next === undefined || !next.startsWith("+++ ")) throw bad("a `---` header is not followed by `+++`");
    const oldPath = headerPath(line.slice(4), "a/");
    const newPath = headerPath(next.slice(4), "b/");
    if (oldPath === null && newPath === null) throw bad("a file goes from /dev/null to /dev/null");
    if (oldPath !== null && newPath !== null && oldPath !== newPath) throw bad("renames are not supported");
    i += 2;
    const hunks: PatchHunk[] = [];
    while (i < lines.length && lines[i]!.startsWith("@@")) {
      const header = /^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@/.exec(lines[i]!);
      if (!header) throw bad(`malformed hunk header ${JSON.stringify(lines[i]!.slice(0, 80))}`);
      let oldCount = header[2] === undefined ? 1 : Number(header[2]);
      let newCount = header[4] === undefined ? 1 : Number(header[4]);
      const oldLines: string[] = [];
      const newLines: string[] = [];
      i++;
      let lastSide: "old" | "new" | "both" | undefined;
      while (i < lines.length && (oldCount > 0 || newCount > 0 || lines[i]!.startsWith("\\"))) {
        const body = lines[i]!;
        const text = body.slice(1);
        if (body.startsWith("\\")) {
          // "\ No newline at end of file": the line before has no terminator.
          if (lastSide === "old" || lastSide === "both") oldLines[oldLines.length - 1] = oldLines.at(-1)!.replace(/\n$/, "");
          if (lastSide === "new" || lastSide === "both") newLines[newLines.length - 1] = newLines.at(-1)!.replace(/\n$/, "");
          i++;
          continue;
        }
        const kind = body === "" ? " " : body[0];
        if (kind === " ") {
          oldLines.push(`${text}\n`);
          newLines.push(`${text}\n`);
          oldCount--;
          newCount--;
          lastSide = "both";
        } else if (kind === "-") {
          oldLines.push(`${text}\n`);
          oldCount--;
          lastSide = "old";
        } else if (kind === "+") {
          newLines.push(`${text}\n`);
          newCount--;
          lastSide = "new";
        } else break;
        i++;
      }
      if (oldCount !== 0 || newCount !== 0) throw bad("a hunk's line counts do not match its header");
      hunks.push({ oldStart: Number(header[1]), oldLines, newLines });
    }
    if (hunks.length === 0 && !(oldPath === null && pendingMode !== undefined)) throw bad(`file ${JSON.stringify(newPath ?? oldPath)} has no hunks`);
    const name = newPath ?? oldPath;
    if (files.some((f) => (f.newPath ?? f.oldPath) === name)) throw bad(`file ${JSON.stringify(name)} appears twice`);
    files.push({ oldPath, newPath, hunks });
    pendingMode = undefined;
  }
  if (files.length === 0) throw bad("it holds no file changes");
  return files;
}

/**
 * Apply one file's hunks to its current text (`null`: the file does not exist). Each hunk must
 * match exactly, at its stated line or the nearest line after the previous hunk; otherwise
 * `conflict`. Returns the new text, or `null` when the file is deleted.
 */
export function applyFilePatch(file: FilePatch, current: string | null): string | null {
  const name = file.newPath ?? file.oldPath ?? "";
  if (file.oldPath === null && current !== null) throw new ToolError("conflict", `the patch creates ${JSON.stringify(name)}, which already exists`);
  if (file.oldPath !== null && current === null) throw new ToolError("conflict", `the patch changes ${JSON.stringify(name)}, which does not exist`);
  const lines = splitLines(current ?? "");
  let floor = 0;
  let shift = 0;
  for (const [index, hunk] of file.hunks.entries()) {
    const wanted = Math.max(floor, hunk.oldStart - 1 + shift + (hunk.oldLines.length === 0 ? 1 : 0));
    const position = findHunk(lines, hunk.oldLines, wanted, floor);
    if (position < 0) throw new ToolError("conflict", `hunk ${index + 1} of ${JSON.stringify(name)} does not match the file's current content`);
    lines.splice(position, hunk.oldLines.length, ...hunk.newLines);
    shift += hunk.newLines.length - hunk.oldLines.length + (position - wanted);
    floor = position + hunk.newLines.length;
  }
  const text = lines.join("");
  if (file.newPath === null) {
    if (text !== "") throw new ToolError("conflict", `the patch deletes ${JSON.stringify(name)}, but lines would remain`);
    return null;
  }
  return text;
}

function matchesAt(lines: readonly string[], wanted: readonly string[], at: number): boolean {
  if (at < 0 || at + wanted.length > lines.length) return false;
  for (let i = 0; i < wanted.length; i++) if (lines[at + i] !== wanted[i]) return false;
  return true;
}

function findHunk(lines: readonly string[], wanted: readonly string[], preferred: number, floor: number): number {
  const start = Math.min(Math.max(preferred, floor), lines.length);
  for (let delta = 0; delta <= lines.length; delta++) {
    if (matchesAt(lines, wanted, start + delta)) return start + delta;
    if (delta > 0 && start - delta >= floor && matchesAt(lines, wanted, start - delta)) return start - delta;
  }
  return -1;
}

/** The path a `diff --git` header names (renames are off, so both sides are one path); undefined when it cannot be read. */
export function diffHeaderPath(header: string): string | undefined {
  const rest = header.slice("diff --git ".length);
  if (rest.startsWith('"')) {
    const first = unquoteC(rest);
    return first?.value.startsWith("a/") ? first.value.slice(2) : undefined;
  }
  const n = (rest.length - 5) / 2;
  if (!Number.isInteger(n) || n <= 0 || !rest.startsWith("a/") || rest.slice(2 + n, 5 + n) !== " b/") return undefined;
  const a = rest.slice(2, 2 + n);
  return a === rest.slice(5 + n) ? a : undefined;
}

/** A C-quoted string as git writes one (`"a/x\tb"`, octal escapes are UTF-8 bytes), and where it ends. */
function unquoteC(text: string): { value: string; end: number } | undefined {
  const bytes: number[] = [];
  const simple: Record<string, number> = { n: 10, t: 9, r: 13, a: 7, b: 8, f: 12, v: 11, '"': 34, "\\": 92 };
  for (let i = 1; i < text.length; i++) {
    const c = text[i]!;
    if (c === '"') return { value: Buffer.from(bytes).toString("utf8"), end: i + 1 };
    if (c !== "\\") {
      bytes.push(...Buffer.from(c, "utf8"));
      continue;
    }
    const next = text[++i];
    if (next === undefined) return undefined;
    if (/[0-7]/.test(next)) {
      bytes.push(parseInt(text.slice(i, i + 3), 8));
      i += 2;
    } else if (simple[next] !== undefined) bytes.push(simple[next]);
    else return undefined;
  }
  return undefined;
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
