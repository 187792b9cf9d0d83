/**
 * Text from a call (a preview, an input, a tool's output) as the terminal shows it: every character
 * a terminal acts on instead of printing — C0 and C1 controls (ESC, CSI, carriage return, backspace),
 * bidi overrides, zero-width and other invisible characters — is shown as a visible `⟨U+XXXX⟩`
 * marker, so an agent cannot erase, hide or reorder what the owner reads before deciding. Line
 * breaks and tabs stay.
 */
const ACTS_ON_TERMINAL = /[\u0000-\u0008\u000B-\u001F\u007F-\u009F\u00AD\u061C\u180E\u200B-\u200F\u202A-\u202E\u2060-\u206F\uFEFF]/g;

export function printable(text: string): string {
  return text.replace(ACTS_ON_TERMINAL, (c) => `⟨U+${c.codePointAt(0)!.toString(16).toUpperCase().padStart(4, "0")}⟩`);
}
