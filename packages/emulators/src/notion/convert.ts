import { randomUUID } from "node:crypto";
import type { BlockObjectResponse, DataSourceObjectResponse, PageObjectResponse, PartialUserObjectResponse, RichTextItemResponse } from "@notionhq/client";
import { isRecord } from "../is-record.js";
import { invalid } from "./errors.js";

/** A page property value as Notion answers it. */
export type PropertyValue = PageObjectResponse["properties"][string];
/** A data source property's configuration as Notion answers it. */
export type PropertyConfig = DataSourceObjectResponse["properties"][string];
/** The parent of a page or block as Notion answers it. */
export type BlockParent = PageObjectResponse["parent"];
export type ApiColor = RichTextItemResponse["annotations"]["color"];
type SelectColor = Extract<PropertyValue, { type: "select" }>["select"] extends infer S ? (S extends { color: infer C } ? C : never) : never;

/** Property types the emulator stores and filters; others are refused with `validation_error`. */
export const PROPERTY_TYPES = ["title", "rich_text", "number", "select", "multi_select", "status", "checkbox", "date", "url", "email"] as const;
export type PropertyType = (typeof PROPERTY_TYPES)[number];

/** Block types the emulator creates from requests. */
export const BLOCK_TYPES = [
  "paragraph",
  "heading_1",
  "heading_2",
  "heading_3",
  "bulleted_list_item",
  "numbered_list_item",
  "to_do",
  "toggle",
  "quote",
  "callout",
  "code",
  "divider",
] as const;

export const MAX_RICH_TEXT_CONTENT = 2000;
export const MAX_RICH_TEXT_ITEMS = 100;
export const MAX_CHILDREN_PER_REQUEST = 100;

const COLORS: readonly string[] = [
  "default",
  "gray",
  "brown",
  "orange",
  "yellow",
  "green",
  "blue",
  "purple",
  "pink",
  "red",
  "default_background",
  "gray_background",
  "brown_background",
  "orange_background",
  "yellow_background",
  "green_background",
  "blue_background",
  "purple_background",
  "pink_background",
  "red_background",
];

/** Normalize an id given with or without dashes to Notion's dashed form; undefined when it is not one. */
export function normalizeId(id: string): string | undefined {
  const hex = id.replace(/-/g, "").toLowerCase();
  if (!/^[0-9a-f]{32}$/.test(hex)) return undefined;
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

export function newId(): string {
  return randomUUID();
}

/** Rich text as Notion stores it, from a request's rich text array; `path` names the field in errors. */
export function richTextFromRequest(value: unknown, path: string): RichTextItemResponse[] {
  if (!Array.isArray(value)) throw invalid(`body failed validation: ${path} should be an array, instead was \`${JSON.stringify(value)}\`.`);
  if (value.length > MAX_RICH_TEXT_ITEMS) {
    throw invalid(`body failed validation: ${path}.length should be ≤ \`${MAX_RICH_TEXT_ITEMS}\`, instead was \`${value.length}\`.`);
  }
  return value.map((item, index) => {
    const at = `${path}[${index}]`;
    if (!isRecord(item) || !isRecord(item["text"])) throw invalid(`body failed validation: ${at}.text should be defined, instead was \`undefined\`.`);
    if (item["type"] !== undefined && item["type"] !== "text") throw invalid(`body failed validation: ${at}.type should be \`"text"\`.`);
    const text = item["text"];
    const content = text["content"];
    if (typeof content !== "string") throw invalid(`body failed validation: ${at}.text.content should be a string.`);
    if (content.length > MAX_RICH_TEXT_CONTENT) {
      throw invalid(`body failed validation: ${at}.text.content.length should be ≤ \`${MAX_RICH_TEXT_CONTENT}\`, instead was \`${content.length}\`.`);
    }
    let url: string | null = null;
    const link = text["link"];
    if (link !== undefined && link !== null) {
      if (!isRecord(link) || typeof link["url"] !== "string") throw invalid(`body failed validation: ${at}.text.link.url should be a string.`);
      if (!isUrl(link["url"])) throw invalid(`Invalid URL for link.`);
      url = link["url"];
    }
    const a = isRecord(item["annotations"]) ? item["annotations"] : {};
    const color = typeof a["color"] === "string" && COLORS.includes(a["color"]) ? (a["color"] as ApiColor) : "default";
    return {
      type: "text",
      text: { content, link: url === null ? null : { url } },
      annotations: {
        bold: a["bold"] === true,
        italic: a["italic"] === true,
        strikethrough: a["strikethrough"] === true,
        underline: a["underline"] === true,
        code: a["code"] === true,
        color,
      },
      plain_text: content,
      href: url,
    } satisfies RichTextItemResponse;
  });
}

export function plainText(rich: readonly RichTextItemResponse[]): string {
  return rich.map((r) => r.plain_text).join("");
}

/** Rich text of one plain string, as Notion would store it. */
export function textRich(content: string): RichTextItemResponse[] {
  return content === "" ? [] : richTextFromRequest([{ text: { content } }], "text");
}

function isUrl(value: string): boolean {
  try {
    const url = new URL(value);
    return url.protocol === "http:" || url.protocol === "https:" || url.protocol === "mailto:";
  } catch {
    return false;
  }
}

/** Facts every stored block shares. */
export interface BlockStamp {
  readonly id: string;
  readonly parent: BlockParent;
  readonly at: string;
  readonly by: PartialUserObjectResponse;
}

/** A block request turned into the block Notion stores, plus its nested children requests. */
export function blockFromRequest(value: unknown, path: string, stamp: BlockStamp): { block: BlockObjectResponse; children: unknown[] } {
  if (!isRecord(value)) throw invalid(`body failed validation: ${path} should be an object.`);
  const declared = value["type"];
  const type = typeof declared === "string" ? declared : BLOCK_TYPES.find((t) => t in value);
  if (type === undefined || !(BLOCK_TYPES as readonly string[]).includes(type)) {
    throw invalid(`body failed validation: ${path}.type should be one of the supported block types, instead was \`${String(type)}\`.`);
  }
  const content = value[type];
  if (!isRecord(content)) throw invalid(`body failed validation: ${path}.${type} should be defined, instead was \`undefined\`.`);
  const children = Array.isArray(content["children"]) ? (content["children"] as unknown[]) : [];
  const common = {
    object: "block" as const,
    id: stamp.id,
    parent: stamp.parent,
    created_time: stamp.at,
    created_by: stamp.by,
    last_edited_time: stamp.at,
    last_edited_by: stamp.by,
    has_children: children.length > 0,
    in_trash: false,
    archived: false,
  };
  const color = (): ApiColor => (typeof content["color"] === "string" && COLORS.includes(content["color"]) ? (content["color"] as ApiColor) : "default");
  const rich = (): RichTextItemResponse[] => richTextFromRequest(content["rich_text"] ?? [], `${path}.${type}.rich_text`);
  let block: BlockObjectResponse;
  switch (type) {
    case "paragraph":
      block = { ...common, type, paragraph: { rich_text: rich(), color: color(), icon: null } };
      break;
    case "heading_1":
      block = { ...common, type, heading_1: { rich_text: rich(), color: color(), is_toggleable: content["is_toggleable"] === true } };
      break;
    case "heading_2":
      block = { ...common, type, heading_2: { rich_text: rich(), color: color(), is_toggleable: content["is_toggleable"] === true } };
      break;
    case "heading_3":
      block = { ...common, type, heading_3: { rich_text: rich(), color: color(), is_toggleable: content["is_toggleable"] === true } };
      break;
    case "bulleted_list_item":
      block = { ...common, type, bulleted_list_item: { rich_text: rich(), color: color() } };
      break;
    case "numbered_list_item":
      block = { ...common, type, numbered_list_item: { rich_text: rich(), color: color() } };
      break;
    case "to_do":
      block = { ...common, type, to_do: { rich_text: rich(), color: color(), checked: content["checked"] === true } };
      break;
    case "toggle":
      block = { ...common, type, toggle: { rich_text: rich(), color: color() } };
      break;
    case "quote":
      block = { ...common, type, quote: { rich_text: rich(), color: color() } };
      break;
    case "callout":
      block = { ...common, type, callout: { rich_text: rich(), color: color(), icon: null } };
      break;
    case "code": {
      const language = content["language"];
      if (typeof language !== "string" || language === "")
        throw invalid(`body failed validation: ${path}.code.language should be defined, instead was \`undefined\`.`);
      block = {
        ...common,
        type,
        code: {
          rich_text: rich(),
          caption: richTextFromRequest(content["caption"] ?? [], `${path}.code.caption`),
          language: language as Extract<BlockObjectResponse, { type: "code" }>["code"]["language"],
        },
      };
      break;
    }
    default:
      block = { ...common, type: "divider", divider: {} };
  }
  return { block, children };
}

/** The rich text of a stored block that carries one, for search and rendering. */
export function blockRichText(block: BlockObjectResponse): RichTextItemResponse[] | undefined {
  const content = (block as unknown as Record<string, unknown>)[block.type];
  return isRecord(content) && Array.isArray(content["rich_text"]) ? (content["rich_text"] as RichTextItemResponse[]) : undefined;
}

/** A property configuration from a seed's short form. */
export function propertyConfig(name: string, spec: PropertySpec): PropertyConfig {
  const base = { id: spec.type === "title" ? "title" : encodeURIComponent(name).slice(0, 8), name, description: null };
  const options = (spec.options ?? []).map((option, i) => ({ id: `opt-${i}`, name: option, color: "default" as SelectColor, description: null }));
  switch (spec.type) {
    case "title":
      return { ...base, type: "title", title: {} };
    case "rich_text":
      return { ...base, type: "rich_text", rich_text: {} };
    case "number":
      return { ...base, type: "number", number: { format: "number" } };
    case "select":
      return { ...base, type: "select", select: { options } };
    case "multi_select":
      return { ...base, type: "multi_select", multi_select: { options } };
    case "status":
      return { ...base, type: "status", status: { options, groups: [] } };
    case "checkbox":
      return { ...base, type: "checkbox", checkbox: {} };
    case "date":
      return { ...base, type: "date", date: {} };
    case "url":
      return { ...base, type: "url", url: {} };
    case "email":
      return { ...base, type: "email", email: {} };
  }
}

/** A data source property in a seed: its type and, for selects, its options. */
export interface PropertySpec {
  readonly type: PropertyType;
  readonly options?: readonly string[];
}

/** A page property value from a request, checked against the property's type. */
export function propertyFromRequest(name: string, type: PropertyType, id: string, value: unknown): PropertyValue {
  const path = `body.properties.${name}`;
  if (!isRecord(value)) throw invalid(`body failed validation: ${path} should be an object.`);
  const raw = value[type];
  if (raw === undefined) {
    throw invalid(`${name} is expected to be ${type}.`);
  }
  const option = (v: unknown, at: string) => {
    if (!isRecord(v) || typeof v["name"] !== "string" || v["name"] === "") throw invalid(`body failed validation: ${at}.name should be a non-empty string.`);
    if (v["name"].includes(",") && type === "multi_select") throw invalid(`Option name cannot contain commas.`);
    return { id: `opt-${v["name"]}`.slice(0, 36), name: v["name"], color: "default" as SelectColor };
  };
  const nullableString = (check?: (s: string) => boolean): string | null => {
    if (raw === null) return null;
    if (typeof raw !== "string" || (check && !check(raw))) throw invalid(`body failed validation: ${path}.${type} should be a valid ${type}.`);
    return raw;
  };
  switch (type) {
    case "title":
      return { id, type, title: richTextFromRequest(raw, `${path}.title`) };
    case "rich_text":
      return { id, type, rich_text: richTextFromRequest(raw, `${path}.rich_text`) };
    case "number":
      if (raw !== null && (typeof raw !== "number" || !Number.isFinite(raw)))
        throw invalid(`body failed validation: ${path}.number should be a number or null.`);
      return { id, type, number: raw };
    case "select":
      return { id, type, select: raw === null ? null : option(raw, `${path}.select`) };
    case "status":
      return { id, type, status: raw === null ? null : option(raw, `${path}.status`) };
    case "multi_select":
      if (!Array.isArray(raw)) throw invalid(`body failed validation: ${path}.multi_select should be an array.`);
      return { id, type, multi_select: raw.map((v, i) => option(v, `${path}.multi_select[${i}]`)) };
    case "checkbox":
      if (typeof raw !== "boolean") throw invalid(`body failed validation: ${path}.checkbox should be a boolean.`);
      return { id, type, checkbox: raw };
    case "date": {
      if (raw === null) return { id, type, date: null };
      if (!isRecord(raw) || typeof raw["start"] !== "string" || Number.isNaN(Date.parse(raw["start"]))) {
        throw invalid(`body failed validation: ${path}.date.start should be an ISO 8601 date.`);
      }
      const end = typeof raw["end"] === "string" ? raw["end"] : null;
      return { id, type, date: { start: raw["start"], end, time_zone: null } };
    }
    case "url":
      return { id, type, url: nullableString((s) => isUrl(s)) };
    case "email":
      return { id, type, email: nullableString((s) => /^[^@\s]+@[^@\s]+$/.test(s)) };
  }
}

/** An empty value of a property's type, for a new page that did not set it. */
export function emptyProperty(type: PropertyType, id: string): PropertyValue {
  switch (type) {
    case "title":
      return { id, type, title: [] };
    case "rich_text":
      return { id, type, rich_text: [] };
    case "number":
      return { id, type, number: null };
    case "select":
      return { id, type, select: null };
    case "status":
      return { id, type, status: null };
    case "multi_select":
      return { id, type, multi_select: [] };
    case "checkbox":
      return { id, type, checkbox: false };
    case "date":
      return { id, type, date: null };
    case "url":
      return { id, type, url: null };
    case "email":
      return { id, type, email: null };
  }
}

/** The title of a page, from whichever property is its title. */
export function pageTitle(page: PageObjectResponse): string {
  for (const value of Object.values(page.properties)) if (value.type === "title") return plainText(value.title);
  return "";
}
