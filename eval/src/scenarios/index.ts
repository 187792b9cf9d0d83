/**
 * The scenario registry: every module's exported scenarios (a `Scenario`, or an array of them, under
 * any name), in this order. Add a family's module to MODULES.
 */
import type { Scenario } from "../scenario.js";
import * as calendar from "./calendar.js";
import * as gmail from "./gmail.js";
import * as notion from "./notion.js";
import * as repo from "./repo.js";

const MODULES: readonly Record<string, unknown>[] = [gmail, calendar, notion, repo];

function isScenario(value: unknown): value is Scenario {
  if (value === null || typeof value !== "object") return false;
  const s = value as Partial<Scenario>;
  return (
    typeof s.id === "string" &&
    typeof s.family === "string" &&
    typeof s.seed === "function" &&
    typeof s.honest === "function" &&
    typeof s.injection === "object"
  );
}

function collect(modules: readonly Record<string, unknown>[]): Scenario[] {
  const found: Scenario[] = [];
  for (const module of modules) {
    for (const value of Object.values(module)) {
      for (const candidate of Array.isArray(value) ? value : [value]) if (isScenario(candidate) && !found.includes(candidate)) found.push(candidate);
    }
  }
  return found;
}

export const SCENARIOS: readonly Scenario[] = collect(MODULES);
