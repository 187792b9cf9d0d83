import path from "node:path";

/** Whether the absolute path `p` is `dir` or inside it, by whole segments (`/a/bc` is not inside `/a/b`). */
export const pathIsUnder = (p: string, dir: string): boolean => p === dir || p.startsWith(dir.endsWith(path.sep) ? dir : dir + path.sep);
