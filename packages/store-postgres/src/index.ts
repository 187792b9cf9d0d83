export { connectPostgresJournal } from "./journal.js";
export type { PostgresJournal, PostgresJournalOptions } from "./journal.js";
export type { PostgresBatchTiming } from "./driver.js";
export { POSTGRES_SCHEMA_VERSION } from "./schema.js";
