import { spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { mkdtemp, realpath, rm } from "node:fs/promises";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sandboxLimits } from "./limits.js";
import { bwrapOnPath, DEFAULT_SANDBOX_READ_ONLY_PATHS, sandboxLaunch, type SandboxSpec, feedSandbox, sandboxStdio } from "./profile.js";
import { SECCOMP_ARCHES, seccompDenied, seccompProgram, seccompTable } from "./seccomp.js";

// ---------- the kernel's numbers, from its headers ----------

const HEADERS: Record<string, string> = {
  x64: "/usr/include/x86_64-linux-gnu/asm/unistd_64.h",
  arm64: "/usr/include/asm-generic/unistd.h",
};
const headersPresent = Object.values(HEADERS).every((h) => existsSync(h));
// In CI the headers must be there (the test fails without them); elsewhere the header checks are skipped.
const checkHeaders = headersPresent || process.env["CI"] !== undefined;

/** `#define __NR_name number` lines of a header (the generic header's conditional aliases have no literal number and are left out). */
function parseHeader(file: string): Map<string, number> {
  const numbers = new Map<string, number>();
  for (const match of readFileSync(file, "utf8").matchAll(/^#define __NR_(\w+)\s+(\d+)\s*$/gm)) numbers.set(match[1]!, Number(match[2]));
  return numbers;
}
/**
 * Calls newer than some headers still in use (Linux 6.6 added fchmodat2): numbered the same on
 * every architecture since the tables were unified, and above every number of a header that lacks them.
 */
const NEWER_THAN_SOME_HEADERS: Record<string, number> = { fchmodat2: 452 };
const header = (arch: string) => {
  const numbers = parseHeader(HEADERS[arch]!);
  for (const [name, nr] of Object.entries(NEWER_THAN_SOME_HEADERS)) if (!numbers.has(name) && Math.max(...numbers.values()) < nr) numbers.set(name, nr);
  return numbers;
};

/** What the filter must refuse with EPERM: the spec, written out independently of the module's list. */
const MUST_DENY = [
  "ptrace",
  "process_vm_readv",
  "process_vm_writev",
  "kcmp",
  "pidfd_getfd",
  "mount",
  "umount2",
  "pivot_root",
  "chroot",
  "move_mount",
  "open_tree",
  "fsopen",
  "fsconfig",
  "fsmount",
  "fspick",
  "mount_setattr",
  "open_by_handle_at",
  "name_to_handle_at",
  "keyctl",
  "add_key",
  "request_key",
  "bpf",
  "perf_event_open",
  "userfaultfd",
  "unshare",
  "setns",
  "io_uring_setup",
  "io_uring_enter",
  "io_uring_register",
  "kexec_load",
  "kexec_file_load",
  "init_module",
  "finit_module",
  "delete_module",
  "reboot",
  "swapon",
  "swapoff",
  "acct",
  "syslog",
  "settimeofday",
  "clock_settime",
  "clock_adjtime",
  "adjtimex",
  "quotactl",
  "quotactl_fd",
  "lookup_dcookie",
  "vhangup",
  "iopl",
  "ioperm",
  "uselib",
  "_sysctl",
];
/** Calls a tool needs, which must pass untouched. */
const MUST_ALLOW = ["read", "write", "openat", "close", "mmap", "execve", "exit_group", "futex", "getpid", "socketpair", "connect", "fcntl"];

// ---------- a classic BPF interpreter, as the kernel runs a seccomp filter ----------

const AUDIT_ARCH: Record<string, number> = { x64: 0xc000003e, arm64: 0xc00000b7, i386: 0x40000003, arm: 0x40000028 };
const X32_BIT = 0x40000000;

const EPERM = 1;
const ENOSYS = 38;
const EAFNOSUPPORT = 97;
type Action = "allow" | { errno: number } | { other: number };

/** Runs `program` on seccomp_data { nr, arch, instruction_pointer, args[6] } and names its action. */
function interpret(program: Buffer, arch: number, nr: number, args: readonly (number | bigint)[] = []): Action {
  expect(program.length % 8).toBe(0);
  const insns = program.length / 8;
  expect(insns).toBeLessThanOrEqual(4096);
  const data = Buffer.alloc(64);
  data.writeInt32LE(nr | 0, 0);
  data.writeUInt32LE(arch >>> 0, 4);
  args.forEach((a, i) => data.writeBigUInt64LE(BigInt.asUintN(64, BigInt(a)), 16 + 8 * i));
  let acc = 0;
  let pc = 0;
  for (let steps = 0; steps <= insns; steps++) {
    if (pc < 0 || pc >= insns) throw new Error(`the program ran off its end at ${pc}`);
    const code = program.readUInt16LE(pc * 8);
    const jt = program.readUInt8(pc * 8 + 2);
    const jf = program.readUInt8(pc * 8 + 3);
    const k = program.readUInt32LE(pc * 8 + 4);
    const jump = (taken: boolean) => (pc += 1 + (taken ? jt : jf));
    switch (code) {
      case 0x20: // BPF_LD | BPF_W | BPF_ABS
        if (k > 60 || k % 4 !== 0) throw new Error(`load of seccomp_data at ${k}`);
        acc = data.readUInt32LE(k);
        pc++;
        break;
      case 0x05: // BPF_JMP | BPF_JA
        pc += 1 + k;
        break;
      case 0x15: // JEQ K
        jump(acc === k);
        break;
      case 0x25: // JGT K
        jump(acc > k);
        break;
      case 0x35: // JGE K
        jump(acc >= k);
        break;
      case 0x45: // JSET K
        jump((acc & k) !== 0);
        break;
      case 0x06: {
        // BPF_RET | BPF_K
        if (k === 0x7fff0000) return "allow";
        if ((k & 0xffff0000) >>> 0 === 0x00050000) return { errno: k & 0xffff };
        return { other: k };
      }
      default:
        throw new Error(`unexpected instruction ${code.toString(16)} at ${pc}`);
    }
  }
  throw new Error("the program loops");
}

const CLONE_NEW = {
  CLONE_NEWNS: 0x00020000,
  CLONE_NEWCGROUP: 0x02000000,
  CLONE_NEWUTS: 0x04000000,
  CLONE_NEWIPC: 0x08000000,
  CLONE_NEWUSER: 0x10000000,
  CLONE_NEWPID: 0x20000000,
  CLONE_NEWNET: 0x40000000,
  CLONE_NEWTIME: 0x00000080,
};
/** What glibc passes for a thread (CLONE_VM|FS|FILES|SIGHAND|THREAD|SYSVSEM|SETTLS|PARENT_SETTID|CHILD_CLEARTID) and for fork (SIGCHLD|CHILD_SETTID|CHILD_CLEARTID). */
const THREAD_FLAGS = 0x003d0f00;
const FORK_FLAGS = 0x01200011;
const AF = { UNIX: 1, INET: 2, INET6: 10, NETLINK: 16, PACKET: 17, BLUETOOTH: 31, VSOCK: 40, ALG: 38 };
/** Where each call that sets a mode takes it (argument index). */
const MODE_ARG: Record<string, number> = { chmod: 1, fchmod: 1, fchmodat: 2, fchmodat2: 2, open: 2, openat: 3, creat: 1, mknod: 1, mknodat: 2 };
const S_ISUID = 0o4000;
const S_ISGID = 0o2000;
const TIOCSTI = 0x5412;
const TIOCLINUX = 0x541c;
const TCGETS = 0x5401;

describe.skipIf(!checkHeaders)("the syscall tables", () => {
  it("the headers are there", () => {
    expect(headersPresent).toBe(true);
  });

  for (const arch of ["x64", "arm64"]) {
    it(`${arch}: every number equals the kernel header's, and a name the header lacks is absent`, () => {
      const kernel = header(arch);
      expect(kernel.get("read")).toBeDefined();
      const table = seccompTable(arch)!;
      expect(Object.keys(table).length).toBeGreaterThan(50);
      for (const [name, nr] of Object.entries(table)) expect([name, nr]).toEqual([name, kernel.get(name)]);
    });

    it(`${arch}: the filter covers every call of the spec the architecture has`, () => {
      const kernel = header(arch);
      expect([...seccompDenied(arch)].sort()).toEqual(MUST_DENY.filter((n) => kernel.has(n)).sort());
    });
  }

  it("a filter exists for x64 and arm64 only", () => {
    expect([...SECCOMP_ARCHES].sort()).toEqual(["arm64", "x64"]);
    expect(seccompProgram({}, "riscv64")).toBeUndefined();
    expect(seccompDenied("riscv64")).toEqual([]);
  });
});

describe.skipIf(!checkHeaders)("the filter, interpreted", () => {
  for (const arch of ["x64", "arm64"]) {
    const kernel = () => header(arch);
    const nr = (name: string) => {
      const n = kernel().get(name);
      if (n === undefined) throw new Error(`${name} missing from the ${arch} header`);
      return n;
    };
    const program = (unixSockets = false) => seccompProgram({ unixSockets }, arch)!;
    const run = (name: string, args: (number | bigint)[] = [], unixSockets = false) => interpret(program(unixSockets), AUDIT_ARCH[arch]!, nr(name), args);

    it(`${arch}: every denied call fails EPERM`, () => {
      const denied = MUST_DENY.filter((n) => kernel().has(n));
      expect(denied.length).toBeGreaterThan(40);
      for (const name of denied) expect([name, run(name)]).toEqual([name, { errno: EPERM }]);
    });

    it(`${arch}: clone with any namespace flag fails EPERM; plain clone (fork, thread) is allowed`, () => {
      for (const [flag, bit] of Object.entries(CLONE_NEW)) {
        expect([flag, run("clone", [bit])]).toEqual([flag, { errno: EPERM }]);
        expect([flag, run("clone", [FORK_FLAGS | bit])]).toEqual([flag, { errno: EPERM }]);
      }
      expect(run("clone", [FORK_FLAGS])).toBe("allow");
      expect(run("clone", [THREAD_FLAGS])).toBe("allow");
      expect(run("clone", [0])).toBe("allow");
    });

    it(`${arch}: clone3 fails ENOSYS (libc falls back to clone)`, () => {
      expect(run("clone3")).toEqual({ errno: ENOSYS });
    });

    it(`${arch}: openat2 fails ENOSYS (its mode is in a structure the filter cannot read; libc falls back to openat)`, () => {
      expect(run("openat2")).toEqual({ errno: ENOSYS });
    });

    it(`${arch}: no call that sets a mode may set the set-user-id or set-group-id bit`, () => {
      const calls = Object.entries(MODE_ARG).filter(([name]) => kernel().has(name));
      expect(calls.map(([name]) => name)).toEqual(expect.arrayContaining(["fchmod", "fchmodat", "fchmodat2", "openat", "mknodat"]));
      for (const [name, index] of calls) {
        const args = (mode: number) => Array.from({ length: 6 }, (_, i) => (i === index ? mode : 0));
        for (const mode of [S_ISUID | 0o755, S_ISGID | 0o755, S_ISUID | S_ISGID, S_ISUID])
          expect([name, mode, run(name, args(mode))]).toEqual([name, mode, { errno: EPERM }]);
        for (const mode of [0o755, 0o644, 0o1777, 0]) expect([name, mode, run(name, args(mode))]).toEqual([name, mode, "allow"]);
      }
    });

    it(`${arch}: socket families: INET, INET6, NETLINK allowed; UNIX only with unix sockets; the rest EAFNOSUPPORT`, () => {
      for (const family of [AF.INET, AF.INET6, AF.NETLINK]) {
        expect(run("socket", [family, 1, 0])).toBe("allow");
        expect(run("socket", [family, 1, 0], true)).toBe("allow");
      }
      expect(run("socket", [AF.UNIX, 1, 0])).toEqual({ errno: EAFNOSUPPORT });
      expect(run("socket", [AF.UNIX, 1, 0], true)).toBe("allow");
      for (const family of [AF.VSOCK, AF.PACKET, AF.BLUETOOTH, AF.ALG, 0, 45, 255]) {
        expect([family, run("socket", [family, 1, 0])]).toEqual([family, { errno: EAFNOSUPPORT }]);
        expect([family, run("socket", [family, 1, 0], true)]).toEqual([family, { errno: EAFNOSUPPORT }]);
      }
    });

    it(`${arch}: ioctl TIOCSTI and TIOCLINUX fail EPERM (whatever the upper bits); other requests pass`, () => {
      expect(run("ioctl", [0, TIOCSTI])).toEqual({ errno: EPERM });
      expect(run("ioctl", [0, TIOCLINUX])).toEqual({ errno: EPERM });
      // the kernel takes the request as an int: upper bits set still mean TIOCSTI
      expect(run("ioctl", [0, 0x1_0000_0000n + BigInt(TIOCSTI)])).toEqual({ errno: EPERM });
      expect(run("ioctl", [0, TCGETS])).toBe("allow");
    });

    it(`${arch}: the calls a program needs are allowed`, () => {
      for (const name of MUST_ALLOW.filter((n) => kernel().has(n))) expect([name, run(name)]).toEqual([name, "allow"]);
      expect(run("read")).toBe("allow");
      expect(run("write")).toBe("allow");
    });

    it(`${arch}: calls of another architecture are refused whole`, () => {
      for (const foreign of Object.entries(AUDIT_ARCH).filter(([a]) => a !== arch)) {
        expect([foreign[0], interpret(program(), foreign[1], nr("read"))]).toEqual([foreign[0], { errno: EPERM }]);
        expect([foreign[0], interpret(program(), foreign[1], 0)]).toEqual([foreign[0], { errno: EPERM }]);
      }
    });
  }

  it("x64: x32 calls are refused (their numbers carry bit 30)", () => {
    const kernel = header("x64");
    const program = seccompProgram({}, "x64")!;
    for (const name of ["read", "write", "getpid"]) {
      expect([name, interpret(program, AUDIT_ARCH["x64"]!, X32_BIT | kernel.get(name)!)]).toEqual([name, { errno: EPERM }]);
    }
    // x32's own numbers for unshare and socket (272 and 41 plus the bit) must not slip through as native ones
    expect(interpret(program, AUDIT_ARCH["x64"]!, X32_BIT | kernel.get("unshare")!, [CLONE_NEW.CLONE_NEWUSER])).toEqual({ errno: EPERM });
    expect(interpret(program, AUDIT_ARCH["x64"]!, -1)).toEqual({ errno: EPERM });
  });
});

// ---------- for real: the kernel runs the filter inside the sandbox ----------

const bwrap = bwrapOnPath();
const runSandboxTests = bwrap !== undefined || process.env["CI"] !== undefined;
const nativeArch = SECCOMP_ARCHES.includes(process.arch);

describe.skipIf(!runSandboxTests || !nativeArch || !checkHeaders)("the filter in the kernel", { timeout: 60_000 }, () => {
  let base: string;
  let sock: string;
  let server: Server;

  beforeAll(async () => {
    base = await realpath(await mkdtemp(path.join(tmpdir(), "toolgate-seccomp-")));
    sock = path.join(base, "host.sock");
    server = createServer((s) => s.end("hi\n"));
    await new Promise<void>((resolve) => server.listen(sock, resolve));
  });

  afterAll(async () => {
    await new Promise((resolve) => server.close(resolve));
    await rm(base, { recursive: true, force: true });
  });

  /** Runs a python3 ctypes probe in the sandbox; it prints one `name errno` line per call (0 = it succeeded). */
  async function probe(calls: string[], over: Partial<SandboxSpec> = {}): Promise<Record<string, number>> {
    const nr = (name: string) => header(process.arch)!.get(name)!;
    const source = [
      "import ctypes, sys",
      "libc = ctypes.CDLL(None, use_errno=True)",
      "libc.syscall.restype = ctypes.c_long",
      "def report(name, r):",
      "  print(name, 0 if r >= 0 else ctypes.get_errno())",
      "  sys.stdout.flush()",
      ...calls.map((c) => c.replace(/\bNR_(\w+)/g, (_, name: string) => String(nr(name)))),
    ].join("\n");
    const launch = sandboxLaunch(
      { bwrap: bwrap ?? "/usr/bin/bwrap", readOnly: DEFAULT_SANDBOX_READ_ONLY_PATHS, cwd: "/tmp", limits: sandboxLimits({}, "test"), ...over },
      ["/usr/bin/python3", "-c", source],
      "test",
    );
    const [program, ...rest] = launch.argv as [string, ...string[]];
    const child = spawn(program, rest, { stdio: sandboxStdio(launch, ["ignore", "pipe", "pipe"]), env: { ...launch.env } });
    feedSandbox(child, launch);
    let stdout = "";
    let stderr = "";
    child.stdout!.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr!.on("data", (d: Buffer) => (stderr += d.toString()));
    const [code, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((resolve) => child.on("close", (c, s) => resolve([c, s])));
    launch.finish({ code, signal });
    expect({ code, stderr }).toEqual({ code: 0, stderr: "" });
    return Object.fromEntries(
      stdout
        .trim()
        .split("\n")
        .map((line) => [line.split(" ")[0]!, Number(line.split(" ")[1])]),
    );
  }

  it("unshare(CLONE_NEWUSER) fails EPERM (the filter, not the namespace limit, which says ENOSPC)", async () => {
    expect(
      await probe([`report("unshare_user", libc.unshare(${CLONE_NEW.CLONE_NEWUSER}))`, `report("unshare_net", libc.unshare(${CLONE_NEW.CLONE_NEWNET}))`]),
    ).toEqual({
      unshare_user: EPERM,
      unshare_net: EPERM,
    });
  });

  it("socket(AF_UNIX) fails EAFNOSUPPORT; AF_INET works; AF_UNIX works once a socket is named", async () => {
    const calls = [
      `report("unix", libc.socket(${AF.UNIX}, 1, 0))`,
      `report("inet", libc.socket(${AF.INET}, 1, 0))`,
      `report("vsock", libc.socket(${AF.VSOCK}, 1, 0))`,
    ];
    expect(await probe(calls)).toEqual({ unix: EAFNOSUPPORT, inet: 0, vsock: EAFNOSUPPORT });
    expect(await probe(calls, { unixSockets: [sock] })).toEqual({ unix: 0, inet: 0, vsock: EAFNOSUPPORT });
  });

  it("the other refusals hold in the kernel: keyctl, io_uring, ptrace, clone3, TIOCSTI, clone with a namespace flag", async () => {
    expect(
      await probe([
        `report("keyctl", libc.syscall(NR_keyctl, 0, -3, 0))`, // KEYCTL_GET_KEYRING_ID of the session keyring
        `report("io_uring", libc.syscall(NR_io_uring_setup, 1, ctypes.create_string_buffer(120)))`,
        `report("ptrace", libc.syscall(NR_ptrace, 0, 0, 0, 0))`, // PTRACE_TRACEME
        `report("clone3", libc.syscall(NR_clone3, ctypes.create_string_buffer(88), 88))`,
        `report("tiocsti", libc.ioctl(0, ${TIOCSTI}, ctypes.c_char_p(b"x")))`,
        `report("clone_newpid", libc.syscall(NR_clone, ${CLONE_NEW.CLONE_NEWPID | 17}, 0, 0, 0, 0))`,
        `report("getpid", libc.getpid())`,
      ]),
    ).toEqual({ keyctl: EPERM, io_uring: EPERM, ptrace: EPERM, clone3: ENOSYS, tiocsti: EPERM, clone_newpid: EPERM, getpid: 0 });
  });

  it("a set-user-id or set-group-id mode is refused in the kernel; a plain mode is not", async () => {
    expect(
      await probe([
        `fd = libc.open(b"/tmp/f", 0o101, 0o755)`, // O_WRONLY|O_CREAT
        `report("create", fd)`,
        `report("chmod_plain", libc.chmod(b"/tmp/f", 0o700))`,
        `report("chmod_suid", libc.chmod(b"/tmp/f", 0o4755))`,
        `report("chmod_sgid", libc.chmod(b"/tmp/f", 0o2755))`,
        `report("fchmod_suid", libc.fchmod(fd, 0o4755))`,
        `report("create_suid", libc.open(b"/tmp/g", 0o101, 0o4755))`,
      ]),
    ).toEqual({ create: 0, chmod_plain: 0, chmod_suid: EPERM, chmod_sgid: EPERM, fchmod_suid: EPERM, create_suid: EPERM });
  });
});
