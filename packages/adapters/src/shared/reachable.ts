import { evaluatePolicy, type Gate, type Profile, type ToolDescriptor, type Visibility } from "@toolgate/core";

/** Which tools an adapter hands to a model. */
export interface ExposeOptions {
  /** Visibilities to include; default `["default"]`. `hidden` tools are never listed unless named here. */
  readonly visibility?: readonly Visibility[];
}

/** The descriptors of the tools `profile` can reach (tokens, risk, consent, egress), in registry order. */
export function reachableTools(gate: Pick<Gate, "registry">, profile: Profile, options: ExposeOptions = {}): readonly ToolDescriptor[] {
  return gate.registry.list({ visibility: options.visibility ?? ["default"] }).filter((d) => profileReaches(d, profile));
}

/** True when the profile's policy allows the tool. */
export function profileReaches(d: ToolDescriptor, profile: Profile): boolean {
  return (
    evaluatePolicy(
      {
        requiredAllowlist: d.requiredAllowlist,
        risk: d.risk,
        requiredConsent: d.requiredConsent,
        dataEgress: d.dataEgress,
        ...(d.dataClass === null ? {} : { dataClass: d.dataClass }),
        ...(d.provider === null ? {} : { provider: d.provider }),
      },
      profile,
    ).kind === "allow"
  );
}

/** A JSON Schema without its `$schema` dialect marker (some validators refuse unknown dialects). */
export function bareSchema(schema: Readonly<Record<string, unknown>>): Record<string, unknown> {
  const { $schema: _dialect, ...rest } = schema;
  return rest;
}
