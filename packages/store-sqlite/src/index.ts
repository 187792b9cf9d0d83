export { openSqliteJournal } from "./journal.js";
export type { SqliteJournal, SqliteJournalOptions, SqliteSynchronous } from "./journal.js";
export { SQLITE_SCHEMA_VERSION } from "./schema.js";
