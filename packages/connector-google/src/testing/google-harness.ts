import { type ConnectorRuntime } from "@toolgate/core";
import { createConnectorRuntime, createMemoryVault, type TokenVault } from "@toolgate/core/connectors";
import { startGoogleEmulator, type CalendarFixture, type GmailFixture, type GoogleEmulator } from "@toolgate/emulators";
import { OAuth2Client } from "google-auth-library";
import { createGoogleConnector } from "../google-connector.js";

/** What a Google family's test starts from: the emulator's state and the scopes a connection gets. */
export interface GoogleHarnessOptions {
  /** The mailbox's starting state. */
  readonly gmail?: GmailFixture;
  /** The calendars' starting state. */
  readonly calendar?: CalendarFixture;
  /** Scopes a connection is granted when `connect()` is not told otherwise: usually every scope the family declares. */
  readonly scopes: readonly string[];
  /** Milliseconds since the epoch, for the emulator and the token runtime; default `Date.now`. */
  readonly clock?: () => number;
}

/** A connection's vault and token runtime, and the secrets a gate must redact for it. */
export interface GoogleConnection {
  readonly vault: TokenVault;
  readonly connectors: ConnectorRuntime;
  readonly secrets: string[];
}

export interface GoogleHarness extends Readonly<Omit<GoogleConnection, "secrets">> {
  readonly emulator: GoogleEmulator;
  readonly secrets: readonly string[];
  /** A new connection (fresh vault and runtime) with these scopes, on the same emulator. */
  connect(scopes?: readonly string[], options?: { clock?: () => number; expiresInMs?: number }): Promise<GoogleConnection>;
}

/**
 * Start the Google emulator and a connector runtime whose tokens came from the emulator's token
 * endpoint through the real OAuth client, as a consent screen would hand them over. For tests only:
 * it needs `@toolgate/emulators`.
 */
export async function startGoogleHarness(options: GoogleHarnessOptions): Promise<GoogleHarness> {
  const emulator = await startGoogleEmulator({
    ...(options.gmail ? { gmail: options.gmail } : {}),
    ...(options.calendar ? { calendar: options.calendar } : {}),
    ...(options.clock ? { clock: options.clock } : {}),
  });
  const connect: GoogleHarness["connect"] = async (scopes = options.scopes, connectOptions = {}) => {
    const clock = connectOptions.clock ?? options.clock ?? Date.now;
    const { clientId, clientSecret } = emulator.client;
    const oauth = new OAuth2Client({ clientId, clientSecret, endpoints: { oauth2TokenUrl: emulator.tokenUrl } });
    const { tokens } = await oauth.getToken(emulator.authorize({ scopes }).code);
    const accessToken = tokens.access_token ?? "";
    const refreshToken = tokens.refresh_token ?? "";
    const vault = createMemoryVault({
      connections: [
        {
          connection: { id: "google-main", provider: "google" },
          tokens: {
            accessToken,
            refreshToken,
            expiresAt: clock() + (connectOptions.expiresInMs ?? (tokens.expiry_date ?? Date.now() + 3_600_000) - Date.now()),
            scopes: (tokens.scope ?? "").split(" "),
            tokenType: "Bearer",
          },
        },
      ],
    });
    const connectors = createConnectorRuntime({ vault, providers: [createGoogleConnector({ clientId, clientSecret, tokenUrl: emulator.tokenUrl })], clock });
    return { vault, connectors, secrets: [accessToken, refreshToken, clientSecret] };
  };
  const first = await connect();
  return { emulator, ...first, connect };
}
