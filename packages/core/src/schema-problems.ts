import type { z } from "zod";

/**
 * One line per issue of a failed parse, for a definition error: the message alone when it names
 * its field, otherwise prefixed with the path (`consents: Invalid input…`).
 */
export function problemsOf(error: z.ZodError): string[] {
  return error.issues.map((issue) => {
    const path = issue.path.map(String).join(".");
    return path === "" || issue.message.includes(String(issue.path[0])) ? issue.message : `${path}: ${issue.message}`;
  });
}
