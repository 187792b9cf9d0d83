import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import type { Context, MiddlewareHandler } from "hono";
import { getCookie } from "hono/cookie";

export const SESSION_COOKIE = "tg_session";
/** Before sign-in: a random value the login form's token is derived from (login CSRF). */
export const LOGIN_COOKIE = "tg_login";

export const CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

/** Every response, refusals and static files included. */
export const securityHeaders: MiddlewareHandler = async (c, next) => {
  await next();
  c.res.headers.set("Content-Security-Policy", CSP);
  c.res.headers.set("X-Content-Type-Options", "nosniff");
  c.res.headers.set("Referrer-Policy", "no-referrer");
  c.res.headers.set("X-Frame-Options", "DENY");
  c.res.headers.set("Cross-Origin-Opener-Policy", "same-origin");
  c.res.headers.set("Cross-Origin-Resource-Policy", "same-origin");
  if (!c.res.headers.has("Cache-Control")) c.res.headers.set("Cache-Control", "no-store");
};

const LOOPBACK_NAMES = new Set(["127.0.0.1", "localhost"]);

/**
 * The Host header names this machine (127.0.0.1 or localhost) and, once known, the console's port:
 * a page on another name that resolves here (DNS rebinding) is refused before anything is read.
 */
export function hostAllowed(host: string | undefined, port: () => number | undefined): boolean {
  if (!host) return false;
  const match = /^(127\.0\.0\.1|localhost)(?::(\d{1,5}))?$/i.exec(host);
  if (!match || !LOOPBACK_NAMES.has(match[1]!.toLowerCase())) return false;
  const expected = port();
  return expected === undefined || Number(match[2] ?? "80") === expected;
}

/**
 * A state change must come from the console's own pages: an `Origin` (sent by browsers on every
 * POST) must be this very origin, and `Sec-Fetch-Site`, when sent, same-origin. Under the
 * console's `Referrer-Policy: no-referrer` a browser posts the console's own forms with
 * `Origin: null`; that counts as this origin only when the browser also marks it same-origin.
 */
export function sameOrigin(c: Context): boolean {
  const host = c.req.header("host");
  const site = c.req.header("sec-fetch-site");
  const sent = c.req.header("origin");
  const origin = sent === "null" && site === "same-origin" ? `http://${host}` : sent;
  if (origin !== undefined && origin !== `http://${host}`) return false;
  return site === undefined || site === "same-origin" || site === "none";
}

/** CSRF tokens: an HMAC of the session (or the pre-login cookie) under a key only this console holds. */
export interface CsrfKeys {
  forSession(session: string): string;
  forLogin(loginCookie: string): string;
  /** Constant-time comparison of a submitted token with the expected one (any lengths). */
  matches(submitted: unknown, expected: string): boolean;
}

export function createCsrfKeys(key: Buffer = randomBytes(32)): CsrfKeys {
  const mac = (purpose: string, value: string) => createHmac("sha256", key).update(`${purpose}\0${value}`).digest("base64url");
  return {
    forSession: (session) => mac("csrf", session),
    forLogin: (cookie) => mac("login", cookie),
    matches(submitted, expected) {
      if (typeof submitted !== "string" || submitted === "") return false;
      // Compared as digests, so neither the length nor a prefix of the expected token leaks.
      const a = createHmac("sha256", key).update(submitted).digest();
      const b = createHmac("sha256", key).update(expected).digest();
      return timingSafeEqual(a, b);
    },
  };
}

/** The session cookie's value, when it has a session id's shape. */
export function sessionCookie(c: Context): string | undefined {
  const value = getCookie(c, SESSION_COOKIE);
  return value !== undefined && /^tgs_[A-Za-z0-9_-]{20,100}$/.test(value) ? value : undefined;
}

export const COOKIE_OPTIONS = { httpOnly: true, sameSite: "Strict", path: "/" } as const;
