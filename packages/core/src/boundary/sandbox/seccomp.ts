/**
 * The seccomp program every sandbox loads (bubblewrap reads it from a descriptor just before the
 * program starts): system calls a tool never needs are refused. A refused call fails with an errno
 * the program can handle (EPERM, or EAFNOSUPPORT for a socket family, ENOSYS for `clone3` so libc
 * falls back to `clone`, whose flags are checked), never a kill, so a tool that probes for a
 * feature keeps running. Calls of another architecture (a 32-bit `int 0x80` on x86-64) and x32
 * calls are refused whole: the filter reads numbers of the native table only.
 */

/** A refused call's name: the same on every architecture that has it. */
export type SeccompDenied = (typeof DENIED)[number];

/**
 * Refused with EPERM: tracing and reading other processes, mounting and changing the root,
 * file handles (a way around the mount namespace), the kernel's key rings and BPF, new namespaces,
 * io_uring (which reaches sockets and files without these calls), and the host-wide knobs (clock,
 * swap, modules, reboot, accounting, the kernel log) no tool has a reason to touch.
 */
const DENIED = [
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
] as const;

/** Calls whose mode argument (at the given index) may not carry the set-user-id or set-group-id bits. */
const MODE_ARGS = { chmod: 1, fchmod: 1, fchmodat: 2, fchmodat2: 2, open: 2, openat: 3, creat: 1, mknod: 1, mknodat: 2 } as const;
type ModeCall = keyof typeof MODE_ARGS;

type Table = Readonly<Record<SeccompDenied | ModeCall | "clone" | "clone3" | "socket" | "socketpair" | "ioctl" | "openat2", number | undefined>>;

/** x86-64 numbers (asm/unistd_64.h). */
const X64: Table = {
  ptrace: 101,
  process_vm_readv: 310,
  process_vm_writev: 311,
  kcmp: 312,
  pidfd_getfd: 438,
  mount: 165,
  umount2: 166,
  pivot_root: 155,
  chroot: 161,
  move_mount: 429,
  open_tree: 428,
  fsopen: 430,
  fsconfig: 431,
  fsmount: 432,
  fspick: 433,
  mount_setattr: 442,
  open_by_handle_at: 304,
  name_to_handle_at: 303,
  keyctl: 250,
  add_key: 248,
  request_key: 249,
  bpf: 321,
  perf_event_open: 298,
  userfaultfd: 323,
  unshare: 272,
  setns: 308,
  io_uring_setup: 425,
  io_uring_enter: 426,
  io_uring_register: 427,
  kexec_load: 246,
  kexec_file_load: 320,
  init_module: 175,
  finit_module: 313,
  delete_module: 176,
  reboot: 169,
  swapon: 167,
  swapoff: 168,
  acct: 163,
  syslog: 103,
  settimeofday: 164,
  clock_settime: 227,
  clock_adjtime: 305,
  adjtimex: 159,
  quotactl: 179,
  quotactl_fd: 443,
  lookup_dcookie: 212,
  vhangup: 153,
  iopl: 172,
  ioperm: 173,
  uselib: 134,
  _sysctl: 156,
  chmod: 90,
  fchmod: 91,
  fchmodat: 268,
  fchmodat2: 452,
  open: 2,
  openat: 257,
  creat: 85,
  mknod: 133,
  mknodat: 259,
  openat2: 437,
  clone: 56,
  clone3: 435,
  socket: 41,
  socketpair: 53,
  ioctl: 16,
};

/** arm64 numbers (the generic table, asm-generic/unistd.h); it has no iopl, ioperm, uselib or _sysctl. */
const ARM64: Table = {
  ptrace: 117,
  process_vm_readv: 270,
  process_vm_writev: 271,
  kcmp: 272,
  pidfd_getfd: 438,
  mount: 40,
  umount2: 39,
  pivot_root: 41,
  chroot: 51,
  move_mount: 429,
  open_tree: 428,
  fsopen: 430,
  fsconfig: 431,
  fsmount: 432,
  fspick: 433,
  mount_setattr: 442,
  open_by_handle_at: 265,
  name_to_handle_at: 264,
  keyctl: 219,
  add_key: 217,
  request_key: 218,
  bpf: 280,
  perf_event_open: 241,
  userfaultfd: 282,
  unshare: 97,
  setns: 268,
  io_uring_setup: 425,
  io_uring_enter: 426,
  io_uring_register: 427,
  kexec_load: 104,
  kexec_file_load: 294,
  init_module: 105,
  finit_module: 273,
  delete_module: 106,
  reboot: 142,
  swapon: 224,
  swapoff: 225,
  acct: 89,
  syslog: 116,
  settimeofday: 170,
  clock_settime: 112,
  clock_adjtime: 266,
  adjtimex: 171,
  quotactl: 60,
  quotactl_fd: 443,
  lookup_dcookie: 18,
  vhangup: 58,
  iopl: undefined,
  ioperm: undefined,
  uselib: undefined,
  _sysctl: undefined,
  chmod: undefined,
  fchmod: 52,
  fchmodat: 53,
  fchmodat2: 452,
  open: undefined,
  openat: 56,
  creat: undefined,
  mknod: undefined,
  mknodat: 33,
  openat2: 437,
  clone: 220,
  clone3: 435,
  socket: 198,
  socketpair: 199,
  ioctl: 29,
};

const ARCHES: Readonly<Record<string, { readonly audit: number; readonly table: Table; readonly x32: boolean }>> = {
  x64: { audit: 0xc000003e, table: X64, x32: true },
  arm64: { audit: 0xc00000b7, table: ARM64, x32: false },
};

/** The socket families a sandboxed program may open: IPv4, IPv6 (in an empty network namespace unless the network is shared) and netlink (to list its own interfaces). */
const AF_UNIX = 1;
const AF_INET = 2;
const AF_INET6 = 10;
const AF_NETLINK = 16;

/** Every namespace flag of `clone` (a new user, mount, pid, network, IPC, UTS, cgroup or time namespace). */
const CLONE_NEW_ANY = 0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000 | 0x40000000 | 0x00000080;
/** ioctls that push input into a terminal (TIOCSTI) or reach the console (TIOCLINUX). */
const TIOCSTI = 0x5412;
const TIOCLINUX = 0x541c;

const S_ISUID = 0o4000;
const S_ISGID = 0o2000;

const EPERM = 1;
const ENOSYS = 38;
const EAFNOSUPPORT = 97;

const RET_ALLOW = 0x7fff0000;
const retErrno = (errno: number) => 0x00050000 | errno;

/** What a program's filter allows beyond the fixed list. */
export interface SeccompOptions {
  /** Let the program open Unix sockets (it names the host sockets it needs; only those are bound). Default false. */
  readonly unixSockets?: boolean;
}

/** The architectures a filter exists for (Node's `process.arch` names). */
export const SECCOMP_ARCHES: readonly string[] = Object.keys(ARCHES);

/** The names the filter refuses with EPERM on `arch` (for the inventory, docs and tests). */
export function seccompDenied(arch: string = process.arch): readonly SeccompDenied[] {
  const spec = ARCHES[arch];
  return spec === undefined ? [] : DENIED.filter((name) => spec.table[name] !== undefined);
}

/** The syscall numbers of `arch` this module uses, by name (for the test that checks them against the kernel's headers). */
export function seccompTable(arch: string): Readonly<Record<string, number | undefined>> | undefined {
  return ARCHES[arch]?.table;
}

type Insn = readonly [code: number, jt: number, jf: number, k: number];
const LD_W_ABS = 0x20;
const JEQ_K = 0x15;
const JGE_K = 0x35;
const JSET_K = 0x45;
const RET_K = 0x06;
const ALU_AND_K = 0x54;
const SOCK_DGRAM = 2;
/** The type's low bits (SOCK_NONBLOCK and SOCK_CLOEXEC ride above them). */
const SOCK_TYPE_MASK = 0xf;

/**
 * The filter for `arch` as a classic BPF program (8-byte instructions, little-endian), ready to
 * hand bubblewrap; undefined where there is none (the sandbox then says so).
 */
export function seccompProgram(options: SeccompOptions = {}, arch: string = process.arch): Buffer | undefined {
  const spec = ARCHES[arch];
  if (spec === undefined) return undefined;
  const t = spec.table;
  const nr = (name: keyof Table) => t[name] as number;
  const program: Insn[] = [];
  const load = (offset: number) => program.push([LD_W_ABS, 0, 0, offset]);
  const ret = (k: number) => program.push([RET_K, 0, 0, k]);
  // Each check: "if equal, fall into the next instruction (a return), else skip it".
  const refuse = (value: number, k: number) => {
    program.push([JEQ_K, 0, 1, value]);
    ret(k);
  };

  load(4); // seccomp_data.arch
  program.push([JEQ_K, 1, 0, spec.audit]);
  ret(retErrno(EPERM));
  load(0); // seccomp_data.nr
  if (spec.x32) {
    program.push([JGE_K, 0, 1, 0x40000000]);
    ret(retErrno(EPERM));
  }
  for (const name of DENIED) {
    const n = t[name];
    if (n !== undefined) refuse(n, retErrno(EPERM));
  }
  refuse(nr("clone3"), retErrno(ENOSYS));
  // openat2 takes its mode in a structure the filter cannot read: ENOSYS, so a caller falls back to openat.
  refuse(nr("openat2"), retErrno(ENOSYS));

  // Blocks that read an argument end in returns, since the call's number is no longer loaded.
  // socket(family, …): the allowed families, anything else EAFNOSUPPORT.
  const families = [AF_INET, AF_INET6, AF_NETLINK, ...(options.unixSockets === true ? [AF_UNIX] : [])];
  const socketBlock: Insn[] = [[LD_W_ABS, 0, 0, 16]];
  families.forEach((family, i) => socketBlock.push([JEQ_K, families.length - i, 0, family]));
  socketBlock.push([RET_K, 0, 0, retErrno(EAFNOSUPPORT)], [RET_K, 0, 0, RET_ALLOW]);
  // socketpair(AF_UNIX, SOCK_DGRAM, …): a datagram socket can send to any named socket it can see
  // (sendto), connected or not. Stream and packet pairs stay allowed (their ends are only each other).
  const pairBlock: Insn[] =
    options.unixSockets === true
      ? [[RET_K, 0, 0, RET_ALLOW]]
      : [
          [LD_W_ABS, 0, 0, 16],
          [JEQ_K, 0, 4, AF_UNIX],
          [LD_W_ABS, 0, 0, 24],
          [ALU_AND_K, 0, 0, SOCK_TYPE_MASK],
          [JEQ_K, 0, 1, SOCK_DGRAM],
          [RET_K, 0, 0, retErrno(EPERM)],
          [RET_K, 0, 0, RET_ALLOW],
        ];
  // clone(flags, …) on both architectures takes its flags first: any namespace flag is refused.
  const cloneBlock: Insn[] = [
    [LD_W_ABS, 0, 0, 16],
    [JSET_K, 0, 1, CLONE_NEW_ANY],
    [RET_K, 0, 0, retErrno(EPERM)],
    [RET_K, 0, 0, RET_ALLOW],
  ];
  // ioctl(fd, request, …): the terminal-injection requests (the low 32 bits: glibc passes an int).
  const ioctlBlock: Insn[] = [
    [LD_W_ABS, 0, 0, 24],
    [JEQ_K, 1, 0, TIOCSTI],
    [JEQ_K, 0, 1, TIOCLINUX],
    [RET_K, 0, 0, retErrno(EPERM)],
    [RET_K, 0, 0, RET_ALLOW],
  ];
  // A sandbox's user is the host's (root, on a root host): a set-user-id file it made in a writable
  // bind would run as that user on the host. No call that sets a mode may set those bits.
  const modeBlocks = (Object.keys(MODE_ARGS) as ModeCall[])
    .filter((name) => t[name] !== undefined)
    .map((name): [ModeCall, Insn[]] => [
      name,
      [
        [LD_W_ABS, 0, 0, 16 + 8 * MODE_ARGS[name]],
        [JSET_K, 0, 1, S_ISUID | S_ISGID],
        [RET_K, 0, 0, retErrno(EPERM)],
        [RET_K, 0, 0, RET_ALLOW],
      ],
    ]);
  for (const [name, block] of [["socket", socketBlock], ["socketpair", pairBlock], ["clone", cloneBlock], ["ioctl", ioctlBlock], ...modeBlocks] as const) {
    program.push([JEQ_K, 0, block.length, nr(name)]);
    program.push(...block);
  }
  ret(RET_ALLOW);

  const out = Buffer.alloc(program.length * 8);
  program.forEach(([code, jt, jf, k], i) => {
    out.writeUInt16LE(code, i * 8);
    out.writeUInt8(jt, i * 8 + 2);
    out.writeUInt8(jf, i * 8 + 3);
    out.writeUInt32LE(k >>> 0, i * 8 + 4);
  });
  return out;
}
