/** `toolgate operators …` and `toolgate kill-switch …`: the owner's side of the approval authority. */
import type { Command } from "commander";
import type { Io } from "../output.js";
import type { WithRuntime } from "../program.js";
import { killSwitchList, killSwitchOff, killSwitchOn } from "./kill-switch.js";
import { operatorsAdd, operatorsChange, operatorsList, operatorsLogin, type OperatorsAddOptions } from "./operators.js";

export function authorityCommands(program: Command, { withRuntime, io }: { withRuntime: WithRuntime; io: Io }): void {
  const operators = program
    .command("operators")
    .description("people who view (viewer), decide approvals (approver) or administer (admin); the CLI acts as the owner");
  operators
    .command("add")
    .description("add an operator and print a one-time login link for the console")
    .argument("<name>", "a short name: letters, digits, . _ @ -")
    .option("--role <role>", "viewer, approver or admin")
    .option("--tools <list>", "approver: only these tools (ids or family.*, comma-separated)")
    .option("--max-risk <risk>", "approver: nothing riskier than this (low, medium, high, critical)")
    .option("--tenants <list>", "approver: only these tenants (comma-separated)")
    .option("--port <port>", "the console's port in the link (default: console.port in the composition, else 7878)")
    .action(withRuntime((rt, name: string, opts: OperatorsAddOptions) => operatorsAdd(rt, name, opts, io)));
  operators
    .command("list")
    .description("every operator: id, name, role, scope, status")
    .option("--json", "print JSON", false)
    .action(withRuntime((rt, opts: { json: boolean }) => operatorsList(rt, opts, io)));
  for (const change of ["disable", "enable", "remove"] as const)
    operators
      .command(change)
      .description(
        { disable: "stop an operator now (sessions and links too)", enable: "let a disabled operator back in", remove: "remove an operator for good" }[change],
      )
      .argument("<name>", "operator name or id")
      .action(withRuntime((rt, name: string) => operatorsChange(rt, change, name, io)));
  operators
    .command("login")
    .description("a fresh one-time login link for an operator")
    .argument("<name>", "operator name or id")
    .option("--port <port>", "the console's port in the link (default: console.port in the composition, else 7878)")
    .action(withRuntime((rt, name: string, opts: { port?: string }) => operatorsLogin(rt, name, opts, io)));

  const killSwitch = program.command("kill-switch").description("stop a tool or a whole family for every worker sharing the journal, from the next call");
  killSwitch
    .command("on")
    .argument("<target>", "a tool id (notes.save_note), or a family: family:notes or notes.*")
    .option("--reason <text>", "why (shown with every refusal)")
    .action(withRuntime((rt, target: string, opts: { reason?: string }) => killSwitchOn(rt, target, opts, io)));
  killSwitch
    .command("off")
    .argument("<target>", "as given to kill-switch on")
    .action(withRuntime((rt, target: string) => killSwitchOff(rt, target, io)));
  killSwitch
    .command("list")
    .option("--json", "print JSON", false)
    .action(withRuntime((rt, opts: { json: boolean }) => killSwitchList(rt, opts, io)));
}
