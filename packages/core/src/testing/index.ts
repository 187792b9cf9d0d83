export { describeToolFamily, reachesFunction } from "./describe-tool-family.js";
export type { DescribeToolFamilyOptions, FamilyTestContext } from "./describe-tool-family.js";
export { describeJournal, sampleIntent, sampleRequest } from "./describe-journal.js";
export type { JournalUnderTest } from "./describe-journal.js";
