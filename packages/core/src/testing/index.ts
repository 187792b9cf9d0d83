/**
 * @toolgate/core/testing — the shared suites every family and every journal store runs, and the
 * small notes family the suites, tests and benchmarks share, and a journal that crashes between an
 * effect and its record. Needs vitest.
 */
export { describeToolFamily, reachesFunction } from "./describe-tool-family.js";
export type { DescribeToolFamilyOptions, FamilyTestContext } from "./describe-tool-family.js";
export { describeJournal, sampleIntent, sampleRequest } from "./describe-journal.js";
export type { JournalUnderTest } from "./describe-journal.js";
export { createCrashingJournal } from "./crashing-journal.js";
export type { CrashingJournal } from "./crashing-journal.js";
export { createNotesStore, createNotesTools } from "./notes-family.js";
export type { NotesStore } from "./notes-family.js";
export { describeJournalTampering } from "./describe-tampering.js";
export type { RawJournalRows, TamperableJournal } from "./describe-tampering.js";
export { writeUpgradeSample, expectUpgradeSample } from "./describe-records.js";
export { testApprover, grantAsOwner, denyAsOwner, askedRequest } from "./approver.js";
export { settlesWithin } from "./settles.js";
