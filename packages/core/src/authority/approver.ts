/**
 * Approvers are unforgeable: the authority keeps every one it makes in a module-private map, and
 * anything else (a plain object with the same fields, a copy, a JSON round trip, a proxy, a
 * string) is refused. The map also says what the approver stands for, so each use re-reads it.
 */
import { ToolError } from "../errors.js";
import type { Approver } from "./types.js";

/** What a made approver stands for, re-read at every use. */
export type Minted =
  | { readonly kind: "owner" }
  | { readonly kind: "operator"; readonly operatorId: string; readonly sessionHash?: string }
  | { readonly kind: "client"; readonly clientId: string };

const minted = new WeakMap<object, Minted>();

export function mint(fields: Approver, stands: Minted): Approver {
  const approver = Object.freeze({ kind: fields.kind, id: fields.id, name: fields.name, role: fields.role, via: fields.via });
  minted.set(approver, Object.freeze(stands));
  return approver;
}

/** What `value` stands for, when the authority made it; otherwise `approver_invalid`. */
export function mintedOf(value: unknown): Minted {
  const stands = typeof value === "object" && value !== null ? minted.get(value) : undefined;
  if (!stands) {
    throw new ToolError(
      "approver_invalid",
      typeof value === "string"
        ? "a decision is made by an authenticated approver from gate.authority (owner(), actingAs, a session), not a typed name"
        : "this approver was not made by the authority (a copied or look-alike object is refused)",
    );
  }
  return stands;
}

export function isMinted(value: unknown): value is Approver {
  return typeof value === "object" && value !== null && minted.has(value);
}

export const OWNER_ID = "owner";
