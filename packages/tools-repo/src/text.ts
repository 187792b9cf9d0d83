import { createHash } from "node:crypto";

const SNIFF_BYTES = 8000;
const utf8 = new TextDecoder("utf-8", { fatal: true });

/** Binary: a NUL byte in the first 8,000 bytes, or bytes that are not UTF-8. */
export function isBinary(bytes: Uint8Array): boolean {
  if (bytes.subarray(0, SNIFF_BYTES).includes(0)) return true;
  try {
    utf8.decode(bytes);
    return false;
  } catch {
    return true;
  }
}

export function sha256(data: string | Uint8Array): string {
  return createHash("sha256").update(data).digest("hex");
}

/** Lines with their terminators kept, so a last line without `\n` differs from one with it. */
export function splitLines(text: string): string[] {
  if (text === "") return [];
  const lines = text.split(/(?<=\n)/);
  return lines;
}

/** Cut `text` to at most `maxBytes` UTF-8 bytes without splitting a character. */
export function cutToBytes(text: string, maxBytes: number): { text: string; truncated: boolean } {
  const bytes = Buffer.from(text, "utf8");
  if (bytes.length <= maxBytes) return { text, truncated: false };
  let end = maxBytes;
  while (end > 0 && (bytes[end]! & 0xc0) === 0x80) end--;
  return { text: bytes.subarray(0, end).toString("utf8"), truncated: true };
}

/**
 * A glob as a RegExp over `/`-separated relative paths: `**` any number of directories, `*` and
 * `?` within one name, `{a,b}` alternatives. A glob without `/` matches a file's name anywhere.
 */
export function globToRegExp(glob: string): { regex: RegExp; basename: boolean } {
  let source = "";
  let depth = 0;
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i]!;
    if (c === "*") {
      if (glob[i + 1] === "*") {
        const slash = glob[i + 2] === "/";
        source += slash ? "(?:.*/)?" : ".*";
        i += slash ? 2 : 1;
      } else {
        source += "[^/]*";
      }
    } else if (c === "?") source += "[^/]";
    else if (c === "{") {
      source += "(?:";
      depth++;
    } else if (c === "}" && depth > 0) {
      source += ")";
      depth--;
    } else if (c === "," && depth > 0) source += "|";
    else source += c.replace(/[.+^${}()|[\]\\]/g, "\\$&");
  }
  source += ")".repeat(depth);
  return { regex: new RegExp(`^${source}$`), basename: !glob.includes("/") };
}
