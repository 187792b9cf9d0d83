export { connectPostgresJournal } from "./journal.js";
export type { PostgresJournal, PostgresJournalOptions } from "./journal.js";
export type { PostgresBatchTiming } from "./batch-types.js";
export type { PostgresTimeouts } from "./session.js";
export { POSTGRES_SCHEMA_VERSION } from "./schema.js";
