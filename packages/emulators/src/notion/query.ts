import type { PageObjectResponse } from "@notionhq/client";
import { isRecord } from "../is-record.js";
import { invalid } from "./errors.js";
import { plainText, type PropertyConfig, type PropertyValue } from "./convert.js";

type Predicate = (page: PageObjectResponse) => boolean;

/** Compile a data source query's `filter` into a predicate, refusing what Notion would refuse. */
export function compileFilter(filter: unknown, schema: Record<string, PropertyConfig>, depth = 0): Predicate {
  if (filter === undefined) return () => true;
  if (!isRecord(filter)) throw invalid("body failed validation: body.filter should be an object.");
  if (Array.isArray(filter["and"]) || Array.isArray(filter["or"])) {
    if (depth >= 2) throw invalid("body failed validation: body.filter can nest compound filters at most two levels deep.");
    const parts = ((filter["and"] ?? filter["or"]) as unknown[]).map((f) => compileFilter(f, schema, depth + 1));
    return Array.isArray(filter["and"]) ? (p) => parts.every((f) => f(p)) : (p) => parts.some((f) => f(p));
  }
  const name = filter["property"];
  if (typeof name !== "string") throw invalid("body failed validation: body.filter.property should be defined, instead was `undefined`.");
  const config = schema[name] ?? Object.values(schema).find((c) => c.id === name);
  if (!config) throw invalid(`Could not find property with name or id: ${name}`);
  const condition = filter[config.type];
  if (!isRecord(condition)) throw invalid(`body failed validation: body.filter.${config.type} should be defined, instead was \`undefined\`.`);
  const entries = Object.entries(condition);
  if (entries.length !== 1) throw invalid(`body failed validation: body.filter.${config.type} should have exactly one condition.`);
  const [operator, operand] = entries[0]!;
  const value = (page: PageObjectResponse): PropertyValue | undefined => page.properties[config.name];
  const test = conditionFor(config.type, operator, operand);
  return (page) => test(value(page));
}

function conditionFor(type: string, operator: string, operand: unknown): (value: PropertyValue | undefined) => boolean {
  const unsupported = (): never => {
    throw invalid(`body failed validation: body.filter.${type}.${operator} is not a supported condition.`);
  };
  switch (type) {
    case "title":
    case "rich_text":
    case "url":
    case "email": {
      const text = (v: PropertyValue | undefined): string => {
        if (!v) return "";
        if (v.type === "title") return plainText(v.title);
        if (v.type === "rich_text") return plainText(v.rich_text);
        if (v.type === "url") return v.url ?? "";
        if (v.type === "email") return v.email ?? "";
        return "";
      };
      if (operator === "is_empty") return (v) => text(v) === "";
      if (operator === "is_not_empty") return (v) => text(v) !== "";
      if (typeof operand !== "string") return unsupported();
      const ops: Record<string, (s: string) => boolean> = {
        equals: (s) => s === operand,
        does_not_equal: (s) => s !== operand,
        contains: (s) => s.toLowerCase().includes(operand.toLowerCase()),
        does_not_contain: (s) => !s.toLowerCase().includes(operand.toLowerCase()),
        starts_with: (s) => s.startsWith(operand),
        ends_with: (s) => s.endsWith(operand),
      };
      const op = ops[operator] ?? unsupported();
      return (v) => op(text(v));
    }
    case "number": {
      const num = (v: PropertyValue | undefined): number | null => (v?.type === "number" ? v.number : null);
      if (operator === "is_empty") return (v) => num(v) === null;
      if (operator === "is_not_empty") return (v) => num(v) !== null;
      if (typeof operand !== "number") return unsupported();
      const ops: Record<string, (n: number) => boolean> = {
        equals: (n) => n === operand,
        does_not_equal: (n) => n !== operand,
        greater_than: (n) => n > operand,
        less_than: (n) => n < operand,
        greater_than_or_equal_to: (n) => n >= operand,
        less_than_or_equal_to: (n) => n <= operand,
      };
      const op = ops[operator] ?? unsupported();
      return (v) => {
        const n = num(v);
        return n !== null && op(n);
      };
    }
    case "checkbox": {
      if (typeof operand !== "boolean") return unsupported();
      const checked = (v: PropertyValue | undefined) => v?.type === "checkbox" && v.checkbox;
      if (operator === "equals") return (v) => checked(v) === operand;
      if (operator === "does_not_equal") return (v) => checked(v) !== operand;
      return unsupported();
    }
    case "select":
    case "status": {
      const name = (v: PropertyValue | undefined): string | null =>
        v?.type === "select" ? (v.select?.name ?? null) : v?.type === "status" ? (v.status?.name ?? null) : null;
      if (operator === "is_empty") return (v) => name(v) === null;
      if (operator === "is_not_empty") return (v) => name(v) !== null;
      if (typeof operand !== "string") return unsupported();
      if (operator === "equals") return (v) => name(v) === operand;
      if (operator === "does_not_equal") return (v) => name(v) !== operand;
      return unsupported();
    }
    case "multi_select": {
      const names = (v: PropertyValue | undefined): string[] => (v?.type === "multi_select" ? v.multi_select.map((o) => o.name) : []);
      if (operator === "is_empty") return (v) => names(v).length === 0;
      if (operator === "is_not_empty") return (v) => names(v).length > 0;
      if (typeof operand !== "string") return unsupported();
      if (operator === "contains") return (v) => names(v).includes(operand);
      if (operator === "does_not_contain") return (v) => !names(v).includes(operand);
      return unsupported();
    }
    case "date": {
      const start = (v: PropertyValue | undefined): number | null => (v?.type === "date" && v.date ? Date.parse(v.date.start) : null);
      if (operator === "is_empty") return (v) => start(v) === null;
      if (operator === "is_not_empty") return (v) => start(v) !== null;
      if (typeof operand !== "string" || Number.isNaN(Date.parse(operand))) return unsupported();
      const at = Date.parse(operand);
      const ops: Record<string, (t: number) => boolean> = {
        equals: (t) => t === at,
        before: (t) => t < at,
        after: (t) => t > at,
        on_or_before: (t) => t <= at,
        on_or_after: (t) => t >= at,
      };
      const op = ops[operator] ?? unsupported();
      return (v) => {
        const t = start(v);
        return t !== null && op(t);
      };
    }
    default:
      return unsupported();
  }
}

/** Sort pages as a query's `sorts` say; the first sort is the primary key. */
export function sortPages(pages: PageObjectResponse[], sorts: unknown, schema: Record<string, PropertyConfig>): PageObjectResponse[] {
  if (sorts === undefined) return pages;
  if (!Array.isArray(sorts)) throw invalid("body failed validation: body.sorts should be an array.");
  const keys = sorts.map((s, i) => {
    if (!isRecord(s) || (s["direction"] !== "ascending" && s["direction"] !== "descending")) {
      throw invalid(`body failed validation: body.sorts[${i}].direction should be \`"ascending"\` or \`"descending"\`.`);
    }
    const sign = s["direction"] === "ascending" ? 1 : -1;
    if (s["timestamp"] === "created_time" || s["timestamp"] === "last_edited_time") {
      const field = s["timestamp"];
      return { sign, key: (p: PageObjectResponse): string | number | null => p[field] };
    }
    const name = s["property"];
    if (typeof name !== "string" || !schema[name]) throw invalid(`Could not find sort property with name or id: ${String(name)}`);
    return { sign, key: (p: PageObjectResponse) => sortKey(p.properties[name]) };
  });
  return [...pages].sort((a, b) => {
    for (const { sign, key } of keys) {
      const x = key(a);
      const y = key(b);
      if (x === y) continue;
      if (x === null) return 1; // empty values last, whichever the direction
      if (y === null) return -1;
      return (x < y ? -1 : 1) * sign;
    }
    return 0;
  });
}

function sortKey(value: PropertyValue | undefined): string | number | null {
  if (!value) return null;
  switch (value.type) {
    case "title":
      return plainText(value.title) || null;
    case "rich_text":
      return plainText(value.rich_text) || null;
    case "number":
      return value.number;
    case "checkbox":
      return value.checkbox ? 1 : 0;
    case "select":
      return value.select?.name ?? null;
    case "status":
      return value.status?.name ?? null;
    case "date":
      return value.date?.start ?? null;
    case "url":
      return value.url;
    case "email":
      return value.email;
    default:
      return null;
  }
}
