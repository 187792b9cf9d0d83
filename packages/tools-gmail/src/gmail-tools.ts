import { defineFamily } from "@toolgate/core";
import { resolveOptions, type GmailToolsOptions } from "./options.js";
import { GMAIL_PERMISSIONS } from "./permissions.js";
import { createDraftTool } from "./tools/create-draft.js";
import { listLabelsTool } from "./tools/list-labels.js";
import { modifyLabelsTool } from "./tools/modify-labels.js";
import { readMessageTool } from "./tools/read-message.js";
import { readThreadTool } from "./tools/read-thread.js";
import { searchMessagesTool } from "./tools/search-messages.js";
import { sendDraftTool } from "./tools/send-draft.js";
import { sendMessageTool } from "./tools/send-message.js";
import { trashMessageTool } from "./tools/trash-message.js";

/**
 * The Gmail family, for `createToolRegistry({ families })`.
 *
 * | tool | token | Google scope | approval |
 * |---|---|---|---|
 * | `gmail.search_messages`, `gmail.read_message`, `gmail.read_thread`, `gmail.list_labels` | `gmail:read` | `gmail.readonly` | never (output untrusted) |
 * | `gmail.create_draft` | `gmail:compose` | `gmail.compose` | never |
 * | `gmail.send_message` | `gmail:send` | `gmail.send` | always |
 * | `gmail.send_draft` | `gmail:send` | `gmail.compose` | always |
 * | `gmail.modify_labels`, `gmail.trash_message` | `gmail:modify` | `gmail.modify` | always |
 *
 * Sends need the consent `send-email-on-my-behalf` and egress of `personal` data. Options are
 * checked here (`config_invalid`); see `GmailToolsOptions`.
 */
export function createGmailTools(options: GmailToolsOptions = {}) {
  const config = resolveOptions(options);
  return defineFamily({
    name: "gmail",
    description: "Gmail: search and read mail (untrusted output), draft, send with approval, label and trash.",
    tools: [
      searchMessagesTool(config),
      readMessageTool(config),
      readThreadTool(config),
      listLabelsTool(config),
      createDraftTool(config),
      sendMessageTool(config),
      sendDraftTool(config),
      modifyLabelsTool(config),
      trashMessageTool(config),
    ],
    permissions: GMAIL_PERMISSIONS,
  });
}
