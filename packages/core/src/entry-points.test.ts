import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";

/**
 * Every entry point's public names, pinned: adding, moving or removing a public name fails here
 * until this list changes with it — a visible decision, not an accident of a re-export.
 * `values` are the names present at run time; `types` the names exported only as types.
 */
const ENTRY_POINTS = {
  "@toolgate/core": {
    file: "index.ts",
    values: ["DATA_CLASSES", "DEFAULT_TIMEOUT_MS", "EFFECTS", "EFFECT_BOUNDARIES", "REDACTED", "RISK_LEVELS", "SHARED_BOUNDARY_TOKENS", "TOOL_ERROR_CODES", "TOOL_ID_MAX_LENGTH", "TOOL_ID_PATTERN", "ToolError", "ToolRegistry", "VISIBILITIES", "canonicalJson", "createGate", "createMemoryJournal", "createRedactor", "createToolRegistry", "defineFamily", "defineProfile", "defineTool", "evaluatePolicy", "fenceUntrusted", "hashCanonical", "isSideEffectful", "isToolErrorCode", "jsonSchemaOf", "profileSchema", "scanForInjection", "sha256Hex"],
    types: ["ActionType", "AnyGate", "AnyToolManifest", "ApprovalDesk", "ApprovalGrant", "ApprovalPreview", "ApprovalRequest", "ApprovalRequiredResult", "ApprovalRule", "ApprovalStatus", "AuditRecord", "CallOptions", "ConnectorHandle", "ConnectorOpenRequest", "ConnectorRequirement", "ConnectorRuntime", "CreateGateOptions", "DataClass", "DeniedResult", "DenyOptions", "Effect", "EffectBoundary", "EffectIdentity", "ErrorResult", "FamilyDefinition", "FencedContent", "Gate", "GrantOptions", "InjectionFinding", "InjectionPolicy", "InputFor", "InvokeResult", "Journal", "JournalReceipt", "ListOptions", "MemoryJournal", "MemoryJournalOptions", "OkResult", "OutboxEntry", "OutboxState", "OutputFor", "PolicyDecision", "PreviewContext", "Profile", "ProfileDefinition", "ProgressEvent", "Redactor", "RiskLevel", "RuntimeIsolation", "SharedBoundaryToken", "SovereigntyClass", "ToolById", "ToolContext", "ToolDefinition", "ToolDescriptor", "ToolErrorCode", "ToolErrorOptions", "ToolFamily", "ToolIdOf", "ToolInput", "ToolManifest", "ToolOutput", "ToolsOfFamilies", "Verifier", "VerifierRunRequest", "VerifierRunResult", "Visibility", "Workspace", "WorkspaceRef"],
  },
  "@toolgate/core/store-kit": {
    file: "store-kit.ts",
    values: ["GENESIS_MAC", "auditKeyCheck", "auditPayload", "chainAuditEvent", "checkGrant", "computeAuditMac", "createJournal", "sealAuditEvent", "unsealAuditEvent", "verifyAuditChain"],
    types: ["ApprovalBinding", "ApprovalDecision", "ApprovalRequest", "ApprovalRequestInput", "ApprovalStatus", "AuditChainVerdict", "AuditEventInput", "AuditEventType", "AuditHead", "AuditKey", "AuditRecord", "BeginIntentOptions", "BeginIntentResult", "ClaimOutboxOptions", "CreateJournalOptions", "GrantCheck", "GrantOutcome", "IntentInput", "Journal", "JournalDriver", "JournalReceipt", "JournalTransaction", "ListFilter", "OutboxClaim", "OutboxEntry", "OutboxState", "RecordedError", "RecordedResult", "SealedAuditEvent", "Settlement", "StoredEntry", "StoredRequest", "TransactionReads", "VerifyAuditChainOptions"],
  },
  "@toolgate/core/connectors": {
    file: "connectors.ts",
    values: ["CONNECTION_ID_PATTERN", "DEFAULT_REFRESH_LEEWAY_MS", "DEFAULT_REFRESH_TIMEOUT_MS", "DEFAULT_TOKEN_LIFETIME_MS", "PROVIDER_NAME_PATTERN", "TOKEN_REFRESH_FAILURES", "TokenRefreshError", "addConnection", "addConnectionFromFile", "chooseConnection", "connectionSchema", "connectionStatus", "createConnectorRuntime", "createFileVault", "createMemoryVault", "generateVaultKey", "listConnections", "parseTokenJson", "removeConnection", "setDefaultConnection", "tokenSetSchema"],
    types: ["AccessGrant", "AddConnectionFromFileOptions", "Connection", "ConnectionInfo", "ConnectionStatus", "ConnectorHandle", "ConnectorLogEvent", "ConnectorOpenRequest", "ConnectorProvider", "ConnectorRuntime", "CreateConnectorRuntimeOptions", "FileVaultOptions", "MemoryVaultOptions", "RefreshRequest", "RefreshedTokens", "StatusOptions", "TokenRefreshFailure", "TokenSet", "TokenVault", "VaultKeySource"],
  },
  "@toolgate/core/boundary": {
    file: "boundary.ts",
    values: ["DEFAULT_SANDBOX_READ_ONLY_PATHS", "MAX_CANDIDATE_LENGTH", "TRUNCATION_MARKER", "createRootGuard", "createVerifier", "createWorkspace", "resolveWithinRoot"],
    types: ["ArtifactWorkspace", "BubblewrapSandbox", "CommandVerifier", "CreateVerifierOptions", "CreateWorkspaceOptions", "PathRefusalReason", "ResolveWithinRootOptions", "RootGuard", "Verifier", "VerifierCommand", "VerifierCommandArgs", "VerifierEnv", "VerifierRunRequest", "VerifierRunResult", "VerifierSandbox", "Workspace", "WorkspaceRef"],
  },
  "@toolgate/core/operator": {
    file: "operator.ts",
    values: ["buildInventory", "recoverOutbox", "renderOperatorDocs", "resolveOutboxEntry", "sovereigntyOf", "verifyAuditChain"],
    types: ["AuditChainVerdict", "AuditKey", "BuildInventoryOptions", "Inventory", "InventoryEntry", "OperatorDocPage", "RecoverOutboxOptions", "RecoveredEntry", "RecoveryReport", "ResolveOutboxOptions", "VerifyAuditChainOptions"],
  },
  "@toolgate/core/testing": {
    file: "testing/index.ts",
    values: ["createCrashingJournal", "createNotesStore", "createNotesTools", "describeJournal", "describeToolFamily", "reachesFunction", "sampleIntent", "sampleRequest"],
    types: ["CrashingJournal", "DescribeToolFamilyOptions", "FamilyTestContext", "JournalUnderTest", "NotesStore"],
  },
} as const;

const declared = (file: string): { values: string[]; types: string[] } => {
  const source = readFileSync(new URL(`./${file}`, import.meta.url), "utf8");
  const values = new Set<string>();
  const types = new Set<string>();
  for (const m of source.matchAll(/export\s+(type\s+)?\{([^}]*)\}/g)) {
    for (const name of m[2]!.split(",").map((n) => n.trim()).filter(Boolean)) (m[1] ? types : values).add(name);
  }
  return { values: [...values].sort(), types: [...types].filter((t) => !values.has(t)).sort() };
};

describe("entry points", () => {
  for (const [specifier, pinned] of Object.entries(ENTRY_POINTS)) {
    it(`${specifier} exports exactly its pinned names`, async () => {
      const loaded = (await import(/* @vite-ignore */ specifier)) as Record<string, unknown>;
      expect(Object.keys(loaded).sort()).toEqual([...pinned.values]);
      expect(declared(pinned.file)).toEqual({ values: [...pinned.values], types: [...pinned.types] });
    });
  }

  it("the root stays small: at most 100 names, values and types together", () => {
    const root = ENTRY_POINTS["@toolgate/core"];
    expect(root.values.length + root.types.length).toBeLessThanOrEqual(100);
  });

  it("store-only names stay out of the root", () => {
    const root: readonly string[] = [...ENTRY_POINTS["@toolgate/core"].values, ...ENTRY_POINTS["@toolgate/core"].types];
    for (const name of ["createJournal", "JournalDriver", "sealAuditEvent", "checkGrant", "GENESIS_MAC", "auditKeyCheck", "createConnectorRuntime", "createVerifier"]) {
      expect(root, name).not.toContain(name);
    }
  });
});
