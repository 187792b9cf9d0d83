// `toolgate console` as a real process in a temp project: it prints where it listens (127.0.0.1
// only), serves the sign-in page with the console's headers, refuses a bad port, and stops on SIGTERM.
import { spawn, spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { beforeEach, describe, expect, it } from "vitest";
import { tempProject } from "./fixtures/temp-project.js";

const bin = fileURLToPath(new URL("../dist/bin.js", import.meta.url));
const env = { PATH: process.env["PATH"] ?? "" };

let dir: string;
beforeEach(() => {
  dir = tempProject("toolgate-console-cli-");
});

describe("toolgate console", () => {
  it("listens on 127.0.0.1, prints its address, and a printed sign-in link signs in; SIGTERM stops it", async () => {
    const child = spawn(process.execPath, [bin, "console", "--port", "0"], { cwd: dir, env, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    const url = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no address printed: ${out}`)), 20_000);
      child.stdout.on("data", (chunk: Buffer) => {
        out += chunk.toString();
        const m = /http:\/\/127\.0\.0\.1:(\d+)/.exec(out);
        if (m) {
          clearTimeout(timer);
          resolve(m[0]);
        }
      });
      child.once("exit", (code) => reject(new Error(`exited ${code}: ${out}`)));
    });
    try {
      const port = new URL(url).port;
      const added = spawnSync(process.execPath, [bin, "operators", "add", "ann", "--role", "approver", "--port", port], { cwd: dir, env, encoding: "utf8" });
      expect(added.status, added.stderr).toBe(0);
      const link = /http:\/\/127\.0\.0\.1:\d+\/login\?token=tgl_[A-Za-z0-9_-]+/.exec(added.stdout)![0];
      expect(new URL(link).port).toBe(port);
      const page = await fetch(link);
      expect(page.status).toBe(200);
      expect(page.headers.get("content-security-policy")).toContain("default-src 'none'");
      expect(await page.text()).toContain("Sign in");
      expect((await fetch(`${url}/approvals`, { redirect: "manual" })).headers.get("location")).toBe("/login");
    } finally {
      const exited = new Promise<number | null>((resolve) => child.once("exit", resolve));
      child.kill("SIGTERM");
      expect(await exited).toBe(0);
    }
  });

  it("refuses a port that is not a whole number from 0 to 65535", () => {
    for (const port of ["abc", "70000", "-1", "1.5"]) {
      const r = spawnSync(process.execPath, [bin, "console", "--port", port], { cwd: dir, env, encoding: "utf8", timeout: 20_000 });
      expect([port, r.status]).toEqual([port, 2]);
    }
  });
});
