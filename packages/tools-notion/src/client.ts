import type { Client } from "@notionhq/client";
import { callNotion, type NotionAccess } from "@toolgate/connector-notion";
import { ToolError, type PreviewContext, type RuntimeIsolation, type ToolContext } from "@toolgate/core";
import type { ResolvedRetry } from "@toolgate/provider-call";

/** A Notion client for one call, whose requests are retried and whose failures are ToolErrors. */
export interface NotionCaller {
  /** A request that changes nothing: retried after 429, 5xx and a lost answer. */
  read<T>(what: string, request: (client: Client) => Promise<T>): Promise<T>;
  /** A request with an effect: retried only when Notion said it did not apply it (429). */
  write<T>(what: string, request: (client: Client) => Promise<T>): Promise<T>;
}

/** The call's Notion client, from the connector token runtime; bound to the call's signal. */
export async function notionCaller(ctx: Pick<ToolContext | PreviewContext, "connector" | "signal">, retry: ResolvedRetry): Promise<NotionCaller> {
  if (!ctx.connector) throw new ToolError("connector_unavailable", "the Notion tools need a Notion connection");
  const access = await ctx.connector.client<NotionAccess>();
  const client = access.client(ctx.signal);
  const call = <T>(write: boolean, what: string, request: (client: Client) => Promise<T>): Promise<T> =>
    callNotion({ method: what, repeatable: !write, write, signal: ctx.signal, retry }, () => request(client));
  return { read: (what, request) => call(false, what, request), write: (what, request) => call(true, what, request) };
}

/** What every Notion tool reaches, and through what. */
export const isolation: RuntimeIsolation = {
  network: "provider",
  filesystem: "none",
  secrets: "connector",
  subprocess: "none",
  notes: "Notion's API through @notionhq/client, with a client from the connector token runtime",
};
