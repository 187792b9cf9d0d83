import type { DataSourceObjectResponse, PageObjectResponse, RichTextItemResponse } from "@notionhq/client";
import { ToolError } from "@toolgate/core";
import { z } from "zod";
import { plainRichText, type RichTextRequest } from "./markdown.js";

/** A Notion id, with or without dashes, or a Notion URL ending in one. */
export const notionId = z
  .string()
  .max(300)
  .transform((value, ctx) => {
    const hex = /([0-9a-f]{32}|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})(?:[?#].*)?$/i
      .exec(value.trim())?.[1]
      ?.replace(/-/g, "")
      .toLowerCase();
    if (!hex) {
      ctx.addIssue({ code: "custom", message: "must be a Notion id (32 hex digits, dashes optional) or a Notion URL ending in one" });
      return z.NEVER;
    }
    return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
  })
  .meta({ description: "A Notion id (dashes optional) or a Notion URL ending in one" });

/** A property value as the model gives it; mapped onto the property's Notion type. */
export const propertyInput = z
  .union([
    z.string().max(20_000),
    z.number(),
    z.boolean(),
    z.null(),
    z.array(z.string().min(1).max(100)).max(100),
    z.object({ start: z.string().min(1).max(64), end: z.string().max(64).nullable().optional() }).strict(),
  ])
  .meta({ description: "text, number, checkbox, select name, list of multi-select names, date (ISO string or {start,end}), or null to clear" });
export type PropertyInput = z.infer<typeof propertyInput>;

/** A property value as the tools return it. */
export const propertyOutput = z.union([
  z.string(),
  z.number(),
  z.boolean(),
  z.null(),
  z.array(z.string()),
  z.object({ start: z.string(), end: z.string().nullable() }),
]);
export type PropertyOutput = z.infer<typeof propertyOutput>;

const plain = (rich: readonly RichTextItemResponse[]) => rich.map((r) => r.plain_text).join("");

/** A page property value, simplified for a model. */
export function simplifyProperty(value: PageObjectResponse["properties"][string]): PropertyOutput {
  switch (value.type) {
    case "title":
      return plain(value.title);
    case "rich_text":
      return plain(value.rich_text);
    case "number":
      return value.number;
    case "checkbox":
      return value.checkbox;
    case "select":
      return value.select?.name ?? null;
    case "status":
      return value.status?.name ?? null;
    case "multi_select":
      return value.multi_select.map((o) => o.name);
    case "date":
      return value.date ? { start: value.date.start, end: value.date.end } : null;
    case "url":
      return value.url;
    case "email":
      return value.email;
    case "phone_number":
      return value.phone_number;
    case "created_time":
      return value.created_time;
    case "last_edited_time":
      return value.last_edited_time;
    case "formula":
      return value.formula.type === "string"
        ? value.formula.string
        : value.formula.type === "number"
          ? value.formula.number
          : value.formula.type === "boolean"
            ? value.formula.boolean
            : null;
    default:
      return null;
  }
}

export function simplifyProperties(page: PageObjectResponse): Record<string, PropertyOutput> {
  const out: Record<string, PropertyOutput> = {};
  for (const [name, value] of Object.entries(page.properties)) out[name] = simplifyProperty(value);
  return out;
}

export function titleOf(page: PageObjectResponse): string {
  for (const value of Object.values(page.properties)) if (value.type === "title") return plain(value.title);
  return "";
}

export function dataSourceTitle(source: DataSourceObjectResponse): string {
  return plain(source.title);
}

type PropertyRequest = Record<string, unknown>;

/** A model's value as the request body for a property of `type`, or a refusal naming what is wrong. */
export function propertyRequest(name: string, type: string, value: PropertyInput): PropertyRequest {
  const wrong = (expected: string): never => {
    throw new ToolError("invalid_input", `property ${JSON.stringify(name)} is a ${type} property; give ${expected}`, { boundary: "effect_not_started" });
  };
  const text = (): string => (typeof value === "string" ? value : value === null ? "" : wrong("a string"));
  switch (type) {
    case "title":
      return { title: plainRichText(text()) satisfies RichTextRequest[] };
    case "rich_text":
      return { rich_text: plainRichText(text()) };
    case "number":
      return { number: typeof value === "number" || value === null ? value : wrong("a number or null") };
    case "checkbox":
      return { checkbox: typeof value === "boolean" ? value : wrong("true or false") };
    case "select":
    case "status":
      return { [type]: value === null ? null : typeof value === "string" && value !== "" ? { name: value } : wrong("an option name or null") };
    case "multi_select":
      return { multi_select: Array.isArray(value) ? value.map((v) => ({ name: v })) : value === null ? [] : wrong("a list of option names") };
    case "date":
      if (value === null) return { date: null };
      if (typeof value === "string") return { date: { start: value } };
      if (value !== null && typeof value === "object" && !Array.isArray(value))
        return { date: { start: value.start, ...(value.end ? { end: value.end } : {}) } };
      return wrong("an ISO date string, {start, end} or null");
    case "url":
    case "email":
    case "phone_number":
      return { [type]: typeof value === "string" ? value : value === null ? null : wrong("a string or null") };
    default:
      throw new ToolError("invalid_input", `property ${JSON.stringify(name)} is a ${type} property, which these tools do not write`, {
        boundary: "effect_not_started",
      });
  }
}

/** A page summary the read tools return. */
export const pageSummary = z.object({
  id: z.string(),
  url: z.string(),
  title: z.string(),
  properties: z.record(z.string(), propertyOutput),
  inTrash: z.boolean(),
  lastEditedTime: z.string(),
});

export function summarizePage(page: PageObjectResponse): z.infer<typeof pageSummary> {
  return {
    id: page.id,
    url: page.url,
    title: titleOf(page),
    properties: simplifyProperties(page),
    inTrash: page.in_trash,
    lastEditedTime: page.last_edited_time,
  };
}
