import { ToolError } from "@toolgate/core";
import { z } from "zod";

/**
 * The zod schema the gate validates a process tool's input with, converted from the JSON Schema
 * the tool declared (zod 4's `z.fromJSONSchema`). A schema that cannot be converted refuses
 * start-up, naming the tool: input is never sent unvalidated.
 */
export function inputSchemaFor(toolId: string, jsonSchema: Readonly<Record<string, unknown>> | boolean): z.ZodType {
  try {
    const schema = z.fromJSONSchema(jsonSchema as Parameters<typeof z.fromJSONSchema>[0]);
    // The registry renders it back for models and docs: make sure that works now, not at first list().
    z.toJSONSchema(schema, { io: "input", unrepresentable: "any" });
    return schema;
  } catch (cause) {
    throw new ToolError("config_invalid", `tool ${toolId} declares an input_schema that cannot be used: ${(cause as Error).message.slice(0, 300)}`, { cause });
  }
}
