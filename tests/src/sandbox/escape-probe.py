#!/usr/bin/python3
"""A hostile program: it tries every way out of a sandbox it knows and reports what worked.

Plain Python 3, standard library only (raw system calls through ctypes), so it runs with nothing
but /usr bound. Two modes:

  escape-probe.py '<targets JSON>'   runs every attempt, prints one JSON line:
                                     {"attempts":[{"name","escaped","detail"[,"count"]}]}
  escape-probe.py --tool             a tool process (protocol 0.1 on stdin/stdout) with two tools:
                                     "try" (input: the targets, output: the same report) and
                                     "daemon" (input: {"marker"}: leaves a setsid double-forked
                                     process holding stdout open, sleeping 600 s, marker in argv).

An attempt reports escaped=true only when the escape worked. Each runs on its own: one that
crashes is reported as not escaped with the error in its detail, and the rest still run.

Targets (every key optional; an absent target skips its attempts):
  secretFiles     [{path, marker}]  host files whose marker must stay unread (also via /proc/<hostPid>/root)
  hidden          [{path, marker}]  paths the host masks; unmounting the mask must not reveal the marker
  readOnly        [path]            paths bound read-only; a remount must not make them writable
  boundDirs       [path]            directories bound from a host filesystem (file-handle attempts)
  hostPid         int               a host process: signals, ptrace, process_vm_readv must not reach it
  hostMarker      str               text in a host process's environment and command line
  writeTargets    [path]            existing host files to append to (the caller checks on the host what arrived)
  writeToken      str               what is written there
  writableDirs    [path]            directories bound writable (a set-user-id root file left there)
  unixSockets     [path]            host unix sockets to connect to
  abstractSocket  str               a host abstract unix socket name
  tcpPort         int               a host TCP listener on 127.0.0.1
  maxProcesses, memoryProbeBytes, tmpProbeBytes, maxOpenFiles   the limits the sandbox should hold
  only            [group]           run only these groups of attempts (see GROUPS)
"""

import ctypes
import errno
import json
import os
import platform
import resource
import select
import signal
import socket
import stat
import struct
import sys
import tempfile
import threading
import time

LIBC = ctypes.CDLL(None, use_errno=True)
LIBC.syscall.restype = ctypes.c_long
# Holds the interpreter lock through the call: a raw clone must not leave its child without it.
PYLIBC = ctypes.PyDLL(None, use_errno=True)
PYLIBC.syscall.restype = ctypes.c_long

NUMBERS = {
    "x86_64": {
        "mount": 165, "umount2": 166, "pivot_root": 155, "chroot": 161, "name_to_handle_at": 303,
        "open_by_handle_at": 304, "ptrace": 101, "process_vm_readv": 310, "unshare": 272, "setns": 308,
        "keyctl": 250, "bpf": 321, "perf_event_open": 298, "userfaultfd": 323, "io_uring_setup": 425,
        "kill": 62, "clone": 56, "clone3": 435, "kcmp": 312, "pidfd_open": 434, "pidfd_getfd": 438,
    },
    "aarch64": {
        "mount": 40, "umount2": 39, "pivot_root": 41, "chroot": 51, "name_to_handle_at": 264,
        "open_by_handle_at": 265, "ptrace": 117, "process_vm_readv": 270, "unshare": 97, "setns": 268,
        "keyctl": 219, "bpf": 280, "perf_event_open": 241, "userfaultfd": 282, "io_uring_setup": 425,
        "kill": 129, "clone": 220, "clone3": 435, "kcmp": 272, "pidfd_open": 434, "pidfd_getfd": 438,
    },
}[platform.machine()]

CLONE_NEWNS, CLONE_NEWUSER, CLONE_NEWPID = 0x00020000, 0x10000000, 0x20000000
MS_RDONLY, MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 1, 32, 4096, 16384, 1 << 18
MNT_DETACH = 2
AT_FDCWD = -100


def arg(value):
    if value is None:
        return ctypes.c_void_p(None)
    if isinstance(value, int):
        return ctypes.c_long(value)
    if isinstance(value, str):
        return ctypes.c_char_p(value.encode())
    if isinstance(value, bytes):
        return ctypes.c_char_p(value)
    return value  # a ctypes object (buffer, pointer)


def sc(name, *args, lib=LIBC):
    """A raw system call: (return value, errno name or '')."""
    ctypes.set_errno(0)
    rc = lib.syscall(ctypes.c_long(NUMBERS[name]), *[arg(a) for a in args])
    return rc, (errno.errorcode.get(ctypes.get_errno(), str(ctypes.get_errno())) if rc < 0 else "")


def outcome(rc, err):
    return f"returned {rc}" if rc >= 0 else f"refused: {err}"


def mount(source, target, fstype, flags, data=None):
    return sc("mount", source, target, fstype, flags, data)


# --- helpers -------------------------------------------------------------------------------------


class Report:
    def __init__(self):
        self.attempts = []

    def add(self, name, escaped, detail, count=None):
        entry = {"name": name, "escaped": bool(escaped), "detail": str(detail)[:600]}
        if count is not None:
            entry["count"] = count
        self.attempts.append(entry)

    def guard(self, name, fn, *args):
        """Run one attempt; fn returns (escaped, detail[, count]). A crash is reported, never raised."""
        try:
            result = fn(*args)
            self.add(name, *result)
        except BaseException as error:  # noqa: BLE001 - one attempt never stops the others
            self.add(name, False, f"probe error: {type(error).__name__}: {error}")

    def guard_many(self, prefix, fn, *args):
        """Run an attempt that reports several entries [(name, escaped, detail[, count])]."""
        try:
            for entry in fn(*args):
                self.add(*entry)
        except BaseException as error:  # noqa: BLE001
            self.add(prefix, False, f"probe error: {type(error).__name__}: {error}")


def in_child(fn, timeout=20.0):
    """Run fn in a forked child (its namespace, root or mounts changes stay there); its JSON result, bounded in time."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(read_end)
            try:
                data = json.dumps({"ok": fn()})
            except BaseException as error:  # noqa: BLE001
                data = json.dumps({"error": f"{type(error).__name__}: {error}"})
            view = memoryview(data.encode())
            while view:
                view = view[os.write(write_end, view):]
        finally:
            os._exit(0)
    os.close(write_end)
    chunks, deadline, timed_out = [], time.monotonic() + timeout, False
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                timed_out = True
                break
            ready, _, _ = select.select([read_end], [], [], left)
            if ready:
                chunk = os.read(read_end, 65536)
                if not chunk:
                    break
                chunks.append(chunk)
    finally:
        os.close(read_end)
        if timed_out:
            kill_quietly(pid, signal.SIGKILL)
        status = reap(pid, 5.0)
    if timed_out:
        raise TimeoutError(f"child did not finish within {timeout} s")
    if not chunks:
        raise RuntimeError(f"child ended without a result ({describe_status(status)})")
    result = json.loads(b"".join(chunks))
    if "error" in result:
        raise RuntimeError(result["error"])
    return result["ok"]


def kill_quietly(pid, sig):
    try:
        os.kill(pid, sig)
    except OSError:
        pass


def reap(pid, timeout):
    """waitpid, bounded: SIGKILL if it is still there after timeout."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            done, status = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            return None
        if done:
            return status
        if time.monotonic() > deadline:
            kill_quietly(pid, signal.SIGKILL)
            deadline = time.monotonic() + 5.0
        time.sleep(0.01)


def describe_status(status):
    if status is None:
        return "status unknown"
    if os.WIFSIGNALED(status):
        return f"killed by signal {os.WTERMSIG(status)}"
    return f"exit {os.WEXITSTATUS(status)}"


def read_text(path, limit=1 << 20):
    with open(path, "rb") as handle:
        return handle.read(limit).decode("utf-8", "replace")


def holds_marker(path, marker):
    """Whether marker is readable at path (a file, or any file directly in a directory)."""
    if os.path.isdir(path):
        for entry in os.listdir(path):
            try:
                if marker in read_text(os.path.join(path, entry)):
                    return True
            except OSError:
                pass
        return False
    try:
        return marker in read_text(path)
    except OSError:
        return False


def own_lineage():
    """This process, its ancestors (as this pid namespace shows them) and its children."""
    pids, pid = {os.getpid()}, os.getpid()
    while pid > 1:
        try:
            pid = int(read_text(f"/proc/{pid}/stat").rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            break
        pids.add(pid)
    return pids


def foreign_pid(pid):
    """(usable, why): the target pid is not this sandbox's own (a pid namespace may reuse the number)."""
    if not isinstance(pid, int) or pid <= 0:
        return False, "no hostPid given"
    if pid in own_lineage():
        return False, f"pid {pid} is this probe's own lineage here; not sent"
    return True, ""


def errno_name(error):
    return errno.errorcode.get(error.errno, str(error.errno)) if isinstance(error, OSError) and error.errno else str(error)


# --- attempts ------------------------------------------------------------------------------------


def caps():
    status = {}
    for line in read_text("/proc/self/status").splitlines():
        key, _, value = line.partition(":")
        status[key] = value.strip()
    out = []
    for key in ("CapEff", "CapPrm", "CapBnd", "CapAmb"):
        value = int(status.get(key, "0"), 16)
        out.append((f"caps-{key}", value != 0, f"{key}={status.get(key)}"))
    out.append(("no-new-privs", status.get("NoNewPrivs") == "0", f"NoNewPrivs={status.get('NoNewPrivs')} Seccomp={status.get('Seccomp')}"))
    return out


def secret_files(targets):
    out = []
    host_pid = targets.get("hostPid")
    for entry in targets.get("secretFiles", []):
        path, marker = entry["path"], entry["marker"]
        for label, where in (("secret-read", path), ("secret-via-proc-root", f"/proc/{host_pid}/root{path}" if host_pid else None)):
            if where is None:
                continue
            try:
                text = read_text(where)
                out.append((f"{label}:{path}", marker in text, f"read {len(text)} chars{' holding the marker' if marker in text else ', no marker'}"))
            except OSError as error:
                out.append((f"{label}:{path}", False, f"refused: {errno_name(error)}"))
    return out


def proc_scan(targets, exclude_text):
    marker = targets.get("hostMarker")
    if not marker:
        return False, "no hostMarker given"
    me, found, visible, unreadable = os.getpid(), [], 0, 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == me:
            continue
        visible += 1
        try:
            cmdline = read_text(f"/proc/{entry}/cmdline")
        except OSError:
            cmdline = ""
        # This probe's own argv (and its sandbox wrapper's) carries the targets, marker included.
        if exclude_text and exclude_text in cmdline:
            continue
        if marker in cmdline:
            found.append(f"{entry}/cmdline")
        try:
            if marker in read_text(f"/proc/{entry}/environ"):
                found.append(f"{entry}/environ")
        except OSError:
            unreadable += 1
    return bool(found), f"{visible} other pids visible, {unreadable} environ unreadable, marker in: {found or 'none'}"


def ptrace_attempts(targets):
    pid = targets.get("hostPid")
    usable, why = foreign_pid(pid)
    if not usable:
        return [(name, False, why) for name in ("ptrace-attach", "ptrace-seize", "process_vm_readv", "pidfd_getfd")]

    def trace(request):
        rc, err = sc("ptrace", request, pid, 0, 0)
        if rc == 0:
            if request == 0x4206:  # PTRACE_SEIZE: interrupt so it can be detached
                sc("ptrace", 0x4207, pid, 0, 0)
            deadline = time.monotonic() + 2
            while time.monotonic() < deadline:
                try:
                    if os.waitpid(pid, os.WNOHANG | 0x40000000)[0]:
                        break
                except ChildProcessError:
                    break
                time.sleep(0.01)
            sc("ptrace", 17, pid, 0, 0)  # PTRACE_DETACH
            kill_quietly(pid, signal.SIGCONT)
        return [rc == 0, outcome(rc, err)]

    out = [
        ("ptrace-attach", *in_child(lambda: trace(16))),
        ("ptrace-seize", *in_child(lambda: trace(0x4206))),
    ]
    address = 0x400000
    try:
        for line in read_text(f"/proc/{pid}/maps").splitlines():
            if " r" in line:
                address = int(line.split("-")[0], 16)
                break
    except OSError:
        pass
    buffer = ctypes.create_string_buffer(64)
    local = struct.pack("QQ", ctypes.addressof(buffer), 64)
    remote = struct.pack("QQ", address, 64)
    rc, err = sc("process_vm_readv", pid, ctypes.c_char_p(local), 1, ctypes.c_char_p(remote), 1, 0)
    out.append(("process_vm_readv", rc > 0, outcome(rc, err)))
    rc, err = sc("pidfd_open", pid, 0)
    if rc >= 0:
        pidfd = rc
        rc, err = sc("pidfd_getfd", pidfd, 0, 0)
        close_if_fd(rc)
        os.close(pidfd)
    out.append(("pidfd_getfd", rc >= 0, f"fd 0 of the host pid: {outcome(rc, err)}"))
    return out


def signal_attempts(targets):
    pid = targets.get("hostPid")
    usable, why = foreign_pid(pid)
    # Before any signal: the last one (SIGKILL) ends the victim where it can be reached.
    rc, err = sc("kill", -1, 0)
    sees = usable and os.path.exists(f"/proc/{pid}")
    out = [("kill-all-sees-host", rc == 0 and sees, f"kill(-1, 0) {outcome(rc, err)}; host pid {'visible' if sees else 'not visible'} in /proc")]
    for name, sig in (("0", 0), ("SIGSTOP", signal.SIGSTOP), ("SIGUSR1", signal.SIGUSR1), ("SIGTERM", signal.SIGTERM), ("SIGKILL", signal.SIGKILL)):
        if not usable:
            out.append((f"signal-{name}", False, why))
            if name == "0":
                out.append(("signal-group-0", False, why))
            continue
        if name == "0":
            rc, err = sc("kill", -pid, 0)  # its process group
            out.append(("signal-group-0", rc == 0, outcome(rc, err)))
        rc, err = sc("kill", pid, int(sig))
        if sig == signal.SIGSTOP and rc == 0:
            kill_quietly(pid, signal.SIGCONT)
        out.append((f"signal-{name}", rc == 0, outcome(rc, err)))
    return out


def write_attempts(targets):
    out = []
    token = targets.get("writeToken", "escape-probe")
    for path in targets.get("writeTargets", []):
        try:
            # No O_CREAT: the host's file exists, and one created here would be the sandbox's own.
            fd = os.open(path, os.O_WRONLY | os.O_APPEND)
            try:
                os.write(fd, f"{token}\n".encode())
            finally:
                os.close(fd)
            out.append((f"write:{path}", True, "written"))
        except OSError as error:
            out.append((f"write:{path}", False, f"refused: {errno_name(error)}"))
    return out


def host_uid(inside):
    """The host uid that `inside` is, by this user namespace's map (itself where there is none)."""
    for line in read_text("/proc/self/uid_map").splitlines():
        first, outside, count = (int(v) for v in line.split())
        if first <= inside < first + count:
            return outside + inside - first
    return None


def setuid_attempts(targets):
    """A set-user-id file left in a writable bind runs as its owner for whoever on the host executes it:
    made by chmod, by fchmod, by the mode it is created with, and by mknod."""
    out = []

    def by_chmod(path):
        open(path, "wb").close()
        os.chmod(path, 0o4755)

    def by_fchmod(path):
        fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o755)
        try:
            os.fchmod(fd, 0o4755)
        finally:
            os.close(fd)

    def by_create(path):
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o4755))

    def by_mknod(path):
        os.mknod(path, 0o100000 | 0o4755)  # a regular file

    for directory in targets.get("writableDirs", []):
        for how, make in (("chmod", by_chmod), ("fchmod", by_fchmod), ("create", by_create), ("mknod", by_mknod)):
            path = os.path.join(directory, f".escape-probe-suid-{how}-{os.getpid()}")
            name = f"setuid-file-{how}:{directory}"
            try:
                make(path)
                info = os.stat(path)
                owner = host_uid(info.st_uid)
                kept = bool(info.st_mode & 0o4000)
                out.append((name, kept and owner == 0, f"set-user-id {'kept' if kept else 'dropped'}, owner host uid {owner}"))
            except OSError as error:
                out.append((name, False, f"refused: {errno_name(error)}"))
            finally:
                try:
                    os.unlink(path)
                except OSError:
                    pass
    return out


def inherited_fds():
    """Descriptors beyond the standard three that the program was started with: a directory or a file
    of the host's opened outside the sandbox reaches past every bind (openat from it, or read it)."""
    found = []
    listing = os.open("/proc/self/fd", os.O_RDONLY | os.O_DIRECTORY)
    try:
        for entry in os.listdir(listing):
            fd = int(entry)
            if fd <= 2 or fd == listing:
                continue
            try:
                target = os.readlink(f"/proc/self/fd/{fd}")
                info = os.fstat(fd)
            except OSError:
                continue
            if stat_kind(info.st_mode) in ("directory", "file"):
                seen = os.listdir(fd)[:5] if stat_kind(info.st_mode) == "directory" else os.pread(fd, 64, 0)
                found.append(f"fd {fd} -> {target} ({stat_kind(info.st_mode)}: {seen!r})")
    finally:
        os.close(listing)
    return bool(found), "; ".join(found) or "none but pipes, sockets and devices"


def stat_kind(mode):
    return "directory" if stat.S_ISDIR(mode) else "file" if stat.S_ISREG(mode) else "other"


def connect_unix(address):
    try:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    except OSError as error:
        return False, f"socket(AF_UNIX) refused: {errno_name(error)}"
    try:
        sock.settimeout(2)
        sock.connect(address)
        return True, "connected"
    except OSError as error:
        return False, f"connect refused: {errno_name(error)}"
    finally:
        sock.close()


def socket_attempts(targets):
    out = [(f"unix-connect:{path}", *connect_unix(path)) for path in targets.get("unixSockets", [])]
    if targets.get("abstractSocket"):
        # The name as given, and padded with NULs to the whole address (as some listeners bind it).
        name = "\0" + targets["abstractSocket"]
        tries = [connect_unix(name), connect_unix(name.ljust(108, "\0"))]
        out.append(("unix-connect-abstract", any(t[0] for t in tries), "; ".join(t[1] for t in tries)))
    if targets.get("tcpPort"):
        try:
            with socket.create_connection(("127.0.0.1", int(targets["tcpPort"])), timeout=2):
                out.append(("tcp-connect-loopback", True, "connected"))
        except OSError as error:
            out.append(("tcp-connect-loopback", False, f"refused: {errno_name(error) if error.errno else error}"))
    return out


def write_back(path):
    """Write a file's own content back to it (nothing changes, but the write shows it could be set)."""
    current = read_text(path)
    fd = os.open(path, os.O_WRONLY)
    try:
        return os.write(fd, current.encode() or b"\n")
    finally:
        os.close(fd)


def can_write_in(directory):
    if directory == "/proc/sys" or directory.startswith("/proc/sys/"):
        # No file is made in /proc/sys: a knob of the host's that takes a write is what counts.
        try:
            write_back("/proc/sys/kernel/core_pattern")
            return True, "kernel/core_pattern took a write"
        except OSError as error:
            return False, errno_name(error)
    probe = os.path.join(directory, f".escape-probe-{os.getpid()}")
    try:
        fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        os.close(fd)
        os.unlink(probe)
        return True, "a file was created"
    except OSError as error:
        return False, errno_name(error)


def mount_family(targets):
    """Mount, unmount and pivot_root, in a forked child. Where this process may make a private mount
    namespace (no sandbox), it works there, so nothing it does reaches the host's mount table."""
    out = []
    rc, err = sc("unshare", CLONE_NEWNS)
    isolated = False
    if rc == 0:
        rc, err = mount(None, "/", None, MS_REC | MS_PRIVATE)
        if rc != 0:
            return [["mount-family", False, f"a new mount namespace could not be made private ({err}); not run"]]
        isolated = True
    where = "in a private mount namespace" if isolated else "in the namespace it was given"

    rc, err = mount(None, "/", None, MS_REMOUNT | MS_BIND)
    out.append(["remount-root-rw", rc == 0, f"{where}: {outcome(rc, err)}"])

    for path in targets.get("readOnly", []):
        before, why = can_write_in(path)
        if before:
            out.append([f"remount-rw:{path}", True, "writable without a remount"])
            continue
        rc, err = mount(None, path, None, MS_REMOUNT | MS_BIND)
        steps = f"remount {outcome(rc, err)}"
        if rc != 0 and err == "EINVAL":  # not a mount point: bind it onto itself first
            rc, err = mount(path, path, None, MS_BIND)
            steps += f"; bind {outcome(rc, err)}"
            if rc == 0:
                rc, err = mount(None, path, None, MS_REMOUNT | MS_BIND)
                steps += f"; remount {outcome(rc, err)}"
        after, why = can_write_in(path) if rc == 0 else (False, "")
        out.append([f"remount-rw:{path}", after, f"{where}: {steps}; write {'worked' if after else 'refused ' + why}"])

    for fstype in ("tmpfs", "proc"):
        target = tempfile.mkdtemp(prefix="escape-probe-")
        rc, err = mount(fstype, target, fstype, 0, "size=1m" if fstype == "tmpfs" else None)
        detail = f"{where}: {outcome(rc, err)}"
        if rc == 0:
            if fstype == "proc":
                detail += f"; it shows {sum(1 for e in os.listdir(target) if e.isdigit())} pids"
            sc("umount2", target, MNT_DETACH)
        out.append([f"mount-{fstype}", rc == 0, detail])
        try:
            os.rmdir(target)
        except OSError:
            pass

    for entry in targets.get("hidden", []):
        path, marker = entry["path"], entry["marker"]
        if holds_marker(path, marker):
            out.append([f"unmask:{path}", True, "readable without unmounting anything"])
            continue
        steps = []
        for _ in range(3):  # masks may be stacked
            rc, err = sc("umount2", path, MNT_DETACH)
            steps.append(outcome(rc, err))
            if rc != 0:
                break
        revealed = holds_marker(path, marker)
        out.append([f"unmask:{path}", revealed, f"{where}: umount2 {', '.join(steps)}; marker {'revealed' if revealed else 'not seen'}"])

    # pivot_root moves every process of the mount namespace: only a private one gets a real new root.
    new_root = tempfile.mkdtemp(prefix="escape-probe-root-")
    mounted = isolated and mount("tmpfs", new_root, "tmpfs", 0, "size=1m")[0] == 0
    os.mkdir(os.path.join(new_root, "old"))
    rc, err = sc("pivot_root", new_root, os.path.join(new_root, "old"))
    detail = f"{where}: {outcome(rc, err)}"
    if not mounted and err == "EINVAL":
        detail += " (permitted; the new root was not a mount point)"
    out.append(["pivot_root", rc == 0, detail])
    if rc != 0:
        os.rmdir(os.path.join(new_root, "old"))
        if mounted:
            sc("umount2", new_root, MNT_DETACH)
        os.rmdir(new_root)
    return out


def chroot_attempt():
    target = tempfile.mkdtemp(prefix="escape-probe-chroot-")
    try:
        rc, err = sc("chroot", target)
        return [rc == 0, outcome(rc, err)]
    finally:
        try:
            os.rmdir(target)
        except OSError:
            pass


def file_handle(handle_type, payload, size=None):
    size = len(payload) if size is None else size
    buffer = ctypes.create_string_buffer(struct.pack("Ii", size, handle_type) + payload.ljust(size, b"\0"))
    return buffer


def handle_attempts(targets):
    """open_by_handle_at: a handle for the base itself, and crafted ones for a filesystem's root inode."""
    out = []
    secrets = targets.get("secretFiles", [])
    for base in ["/", "/usr"] + list(targets.get("boundDirs", [])):
        try:
            mount_fd = os.open(base, os.O_RDONLY | os.O_DIRECTORY)
        except OSError as error:
            out.append((f"open_by_handle_at:{base}", False, f"cannot open the base: {errno_name(error)}"))
            continue
        tried = []
        opened = []
        try:
            named = file_handle(0, b"", 128)
            mount_id = ctypes.c_int(0)
            rc, err = sc("name_to_handle_at", AT_FDCWD, base, named, ctypes.byref(mount_id), 0)
            tried.append(f"name_to_handle_at {outcome(rc, err)}")
            candidates = [("own handle", named)] if rc == 0 else []
            # ext4 and xfs root inodes (2, 128) as FILEID_INO32_GEN, generation 0 (not checked).
            candidates += [(f"crafted ino {ino}", file_handle(1, struct.pack("II", ino, 0))) for ino in (2, 128)]
            for label, handle in candidates:
                rc, err = sc("open_by_handle_at", mount_fd, handle, os.O_RDONLY | os.O_DIRECTORY)
                tried.append(f"{label}: {outcome(rc, err)}")
                if rc >= 0:
                    try:
                        names = sorted(os.listdir(rc))[:8]
                        read = []
                        for entry in secrets:
                            try:
                                fd = os.open(entry["path"].lstrip("/"), os.O_RDONLY, dir_fd=rc)
                                with os.fdopen(fd, "rb") as handle_file:
                                    if entry["marker"].encode() in handle_file.read(1 << 20):
                                        read.append(entry["path"])
                            except OSError:
                                pass
                        opened.append(f"{label} lists {names}; secrets read: {read or 'none'}")
                    finally:
                        os.close(rc)
        finally:
            os.close(mount_fd)
        out.append((f"open_by_handle_at:{base}", bool(opened), "; ".join(tried + opened)))
    return out


def namespace_attempts():
    out = []
    for name, flags in (("unshare-user", CLONE_NEWUSER), ("unshare-mount", CLONE_NEWNS)):
        out.append((name, *in_child(lambda flags=flags: (lambda r: [r[0] == 0, outcome(*r)])(sc("unshare", flags)))))

    def pid_namespace_fork():
        rc, err = sc("unshare", CLONE_NEWPID)
        if rc != 0:
            return [False, f"unshare(CLONE_NEWPID) {outcome(rc, err)}"]
        child = os.fork()
        if child == 0:
            os._exit(1 if os.getpid() == 1 else 2)
        status = reap(child, 5)
        first = status is not None and os.WIFEXITED(status) and os.WEXITSTATUS(status) == 1
        return [first, f"unshare(CLONE_NEWPID) worked; the forked child {'was pid 1 of a new namespace' if first else 'was not pid 1'}"]

    out.append(("unshare-pid-then-fork", *in_child(pid_namespace_fork)))

    def userns_then_mount():
        rc, err = sc("unshare", CLONE_NEWUSER | CLONE_NEWNS)
        if rc != 0:
            return [False, f"unshare(CLONE_NEWUSER|CLONE_NEWNS) {outcome(rc, err)}"]
        target = tempfile.mkdtemp(prefix="escape-probe-")
        try:
            rc, err = mount("tmpfs", target, "tmpfs", 0, "size=1m")
            return [rc == 0, f"a new user namespace; mount tmpfs in it {outcome(rc, err)}"]
        finally:
            sc("umount2", target, MNT_DETACH)
            os.rmdir(target)

    out.append(("userns-then-mount", *in_child(userns_then_mount)))

    # clone with a namespace flag, as a raw call (no fork helper) and as clone3 (whose flags a filter cannot read).
    def raw_clone(kind):
        if kind == "clone":
            rc, err = sc("clone", CLONE_NEWUSER | signal.SIGCHLD, 0, 0, 0, 0, lib=PYLIBC)
        else:
            args = ctypes.create_string_buffer(struct.pack("8Q", CLONE_NEWUSER, 0, 0, 0, int(signal.SIGCHLD), 0, 0, 0))
            rc, err = sc("clone3", args, 64, lib=PYLIBC)
        if rc == 0:
            PYLIBC._exit(0)
        if rc > 0:
            reap(rc, 5)
        return [rc > 0, outcome(rc, err)]

    out.append(("clone-newuser", *in_child(lambda: raw_clone("clone"))))
    out.append(("clone3-newuser", *in_child(lambda: raw_clone("clone3"))))

    for ns in ("mnt", "pid", "net", "user", "ipc", "uts", "cgroup"):
        def enter(ns=ns):
            # pid 1's namespaces; where pid 1 cannot be read, this process's own (the call itself is what is refused).
            for owner in ("1", "self"):
                try:
                    fd = os.open(f"/proc/{owner}/ns/{ns}", os.O_RDONLY)
                except OSError as error:
                    opened = f"/proc/{owner}/ns/{ns}: {errno_name(error)}"
                    continue
                rc, err = sc("setns", fd, 0)
                return [rc == 0, f"/proc/{owner}/ns/{ns}: {outcome(rc, err)}"]
            return [False, opened]

        try:
            out.append((f"setns:{ns}", *in_child(enter)))
        except RuntimeError as error:
            out.append((f"setns:{ns}", False, f"{error}"))
    return out


_int80 = []


def int80(nr, a1=0, a2=0, a3=0):
    """A system call through the 32-bit entry (int 0x80) from this 64-bit process: another
    architecture's table, which a filter that reads only native numbers would let through."""
    if platform.machine() != "x86_64":
        raise OSError(errno.ENOSYS, "no 32-bit entry on this architecture")
    if not _int80:
        code = bytes.fromhex(
            "53"  # push rbx
            "4989c8"  # mov r8, rcx
            "4889f8"  # mov rax, rdi
            "4889f3"  # mov rbx, rsi
            "4889d1"  # mov rcx, rdx
            "4c89c2"  # mov rdx, r8
            "cd80"  # int 0x80
            "4863c0"  # movsxd rax, eax
            "5b"  # pop rbx
            "c3"  # ret
        )
        LIBC.mmap.restype = ctypes.c_void_p
        LIBC.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
        page = LIBC.mmap(None, 4096, 7, 0x22, -1, 0)  # read, write, exec; private, anonymous
        if page in (None, ctypes.c_void_p(-1).value):
            raise OSError(ctypes.get_errno(), "mmap of an executable page refused")
        ctypes.memmove(page, code, len(code))
        _int80.append(ctypes.CFUNCTYPE(ctypes.c_long, ctypes.c_long, ctypes.c_long, ctypes.c_long, ctypes.c_long)(page))
    rc = _int80[0](nr, a1, a2, a3)
    return rc, (errno.errorcode.get(-rc, str(-rc)) if rc < 0 else "")


NO_32_BIT_ENTRY = "no 32-bit entry on this kernel"


def int80_faults():
    """Whether a harmless call (getpid, i386 number 20) through int 0x80 faults in a child: some
    kernels and hypervisors take no 32-bit calls from a 64-bit process at all, whatever a filter says."""
    if platform.machine() != "x86_64":
        return False
    pid = os.fork()
    if pid == 0:
        try:
            int80(20)
        finally:
            os._exit(0)
    status = reap(pid, 20.0)
    return status is not None and os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGSEGV


def other_abi_attempts():
    """The calls the filter refuses, made through the 32-bit entry and the x32 numbers instead."""
    out = []
    no_entry = int80_faults()

    def through_int80(nr, *args):
        rc, err = int80(nr, *args)
        if rc >= 0 and nr == 359:
            os.close(rc)
        return [rc >= 0, outcome(rc, err)]

    # i386 numbers: unshare 310, socket 359 (AF_UNIX, SOCK_STREAM).
    for name, nr, args in (("int80-unshare-user", 310, (CLONE_NEWUSER,)), ("int80-socket-unix", 359, (1, 1, 0))):
        if no_entry:
            out.append((name, False, f"{NO_32_BIT_ENTRY} (getpid through int 0x80 faulted)"))
            continue
        try:
            out.append((name, *in_child(lambda nr=nr, args=args: through_int80(nr, *args))))
        except RuntimeError as error:
            out.append((name, False, f"{error}"))

    def x32_unshare():
        ctypes.set_errno(0)
        rc = LIBC.syscall(ctypes.c_long(0x40000000 | 272), ctypes.c_long(CLONE_NEWUSER))
        return [rc == 0, outcome(rc, errno.errorcode.get(ctypes.get_errno(), "")) if platform.machine() == "x86_64" else "not x86_64"]

    out.append(("x32-unshare-user", *in_child(x32_unshare)) if platform.machine() == "x86_64" else ("x32-unshare-user", False, "not x86_64"))
    return out


def close_if_fd(rc):
    if rc >= 0:
        os.close(rc)


def kernel_attempts():
    out = []
    rc, err = sc("keyctl", 0, -3, 0)  # KEYCTL_GET_KEYRING_ID, the session keyring
    out.append(("keyctl", rc >= 0, outcome(rc, err)))

    attr = ctypes.create_string_buffer(struct.pack("IIII", 2, 4, 4, 1).ljust(128, b"\0"))  # an array map
    rc, err = sc("bpf", 0, attr, 128)
    out.append(("bpf", rc >= 0, outcome(rc, err)))
    close_if_fd(rc)

    # A software cpu-clock counter on itself, kernel excluded: what any process may open where the call is allowed.
    perf = ctypes.create_string_buffer(struct.pack("IIQQQQQ", 1, 112, 0, 0, 0, 0, (1 << 5) | (1 << 6)).ljust(112, b"\0"))
    rc, err = sc("perf_event_open", perf, 0, -1, -1, 0)
    out.append(("perf_event_open", rc >= 0, outcome(rc, err)))
    close_if_fd(rc)

    rc, err = sc("userfaultfd", os.O_CLOEXEC | os.O_NONBLOCK)
    out.append(("userfaultfd", rc >= 0, outcome(rc, err)))
    close_if_fd(rc)

    params = ctypes.create_string_buffer(120)
    rc, err = sc("io_uring_setup", 1, params)
    out.append(("io_uring_setup", rc >= 0, outcome(rc, err)))
    close_if_fd(rc)

    for name, family, kind, proto in (("socket-vsock", 40, socket.SOCK_STREAM, 0), ("socket-packet", 17, socket.SOCK_RAW, socket.htons(3))):
        try:
            socket.socket(family, kind, proto).close()
            out.append((name, True, "created"))
        except OSError as error:
            out.append((name, False, f"refused: {errno_name(error)}"))

    injected = []
    for label in ("0", "1", "2", "/dev/tty"):
        try:
            fd = os.open(label, os.O_RDWR) if label.startswith("/") else int(label)
        except OSError as error:
            injected.append(f"{label}: {errno_name(error)}")
            continue
        try:
            if not os.isatty(fd):
                injected.append(f"{label}: not a tty")
                continue
            ctypes.set_errno(0)
            rc = LIBC.ioctl(fd, 0x5412, ctypes.c_char_p(b"\0"))  # TIOCSTI
            injected.append(f"{label}: {outcome(rc, errno.errorcode.get(ctypes.get_errno(), ''))}")
            if rc == 0:
                out.append(("tiocsti", True, "; ".join(injected)))
                return out
        finally:
            if label.startswith("/"):
                os.close(fd)
    out.append(("tiocsti", False, "; ".join(injected)))

    # Host-wide kernel knobs: each written back with the value it holds (nothing changes, but a write
    # that works means the program could set them: a core_pattern pipe runs a program as host root).
    for path in ("/proc/sys/kernel/core_pattern", "/proc/sys/fs/pipe-max-size", "/proc/sys/kernel/uevent_helper"):
        try:
            written = write_back(path)
            out.append((f"sysctl-write:{path}", True, f"wrote its own value back ({written} bytes)"))
        except OSError as error:
            out.append((f"sysctl-write:{path}", False, f"refused: {errno_name(error)}"))
    # Every host-wide knob (net/ is this network namespace's own) that opens for writing; nothing is written.
    writable = []
    for directory, subdirs, files in os.walk("/proc/sys"):
        if directory == "/proc/sys":
            subdirs[:] = [d for d in subdirs if d != "net"]
        for name in files:
            path = os.path.join(directory, name)
            try:
                os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
                writable.append(path)
            except OSError:
                pass
    out.append(("sysctl-open-for-write", bool(writable), f"{len(writable)} host-wide knobs open for writing: {', '.join(writable[:12])}"))
    # A limit the program could lift (raising a hard limit needs CAP_SYS_RESOURCE) bounds nothing.
    lifted = []
    for label, which in (("NPROC", resource.RLIMIT_NPROC), ("NOFILE", resource.RLIMIT_NOFILE), ("DATA", resource.RLIMIT_DATA), ("FSIZE", resource.RLIMIT_FSIZE)):
        soft, hard = resource.getrlimit(which)
        if hard == resource.RLIM_INFINITY:
            lifted.append(f"{label} unlimited")
            continue
        try:
            resource.setrlimit(which, (soft, hard + 1))
            lifted.append(f"{label} raised past {hard}")
            resource.setrlimit(which, (soft, hard))
        except (OSError, ValueError):
            pass
    out.append(("rlimit-raise", bool(lifted), "; ".join(lifted) or "every hard limit set and held"))
    try:
        os.close(os.open("/proc/sysrq-trigger", os.O_WRONLY))  # opened only: a write would act
        out.append(("sysrq-trigger-open", True, "opened for writing"))
    except OSError as error:
        out.append(("sysrq-trigger-open", False, f"refused: {errno_name(error)}"))
    return out


# --- limits (each in a child that reports its progress on a pipe, so a kill still leaves a count) ---


def progress_child(work, timeout):
    """Run work(report) in a child; report(n) records progress. Returns (last n, how the child ended)."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            os.close(read_end)
            work(lambda n, note="": os.write(write_end, (json.dumps([n, note]) + "\n").encode()))
        except BaseException:  # noqa: BLE001
            code = 3
        finally:
            os._exit(code)
    os.close(write_end)
    buffer, deadline, timed_out = b"", time.monotonic() + timeout, False
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            timed_out = True
            break
        ready, _, _ = select.select([read_end], [], [], left)
        if ready:
            chunk = os.read(read_end, 65536)
            if not chunk:
                break
            buffer += chunk
    os.close(read_end)
    if timed_out:
        kill_quietly(pid, signal.SIGKILL)
    status = reap(pid, 10)
    last, note = 0, ""
    for line in buffer.splitlines():
        try:
            last, note = json.loads(line)
        except ValueError:
            pass
    ending = "timed out" if timed_out else describe_status(status)
    return last, f"{note}; child {ending}" if note else f"child {ending}"


def fork_limit(targets):
    cap = 2000

    def work(report):
        gate_read, gate_write = os.pipe()
        children, stopped = [], "cap reached"
        try:
            while len(children) < cap:
                try:
                    child = os.fork()
                except OSError as error:
                    stopped = f"fork refused: {errno_name(error)}"
                    break
                if child == 0:
                    try:
                        os.close(gate_write)
                        os.read(gate_read, 1)  # until the parent lets go
                    finally:
                        os._exit(0)
                children.append(child)
                if len(children) % 50 == 0:
                    report(len(children), "forking")
            report(len(children), stopped)
        finally:
            os.close(gate_write)
            for child in children:
                kill_quietly(child, signal.SIGKILL)
            for child in children:
                reap(child, 5)

    count, how = progress_child(work, 90)
    limit = targets.get("maxProcesses", cap)
    return count > limit, f"{count} processes forked (limit {limit}): {how}", count


def memory_limit(targets):
    goal = int(targets.get("memoryProbeBytes", 256 << 20))
    step = 16 << 20

    def work(report):
        held, total = [], 0
        try:
            while total < goal:
                try:
                    block = bytearray(step)
                    block[::4096] = b"\1" * len(block[::4096])  # touch every page
                except MemoryError:
                    report(total, "MemoryError")
                    return
                held.append(block)
                total += step
                report(total, "allocating")
            report(total, "goal reached")
        finally:
            held.clear()

    reached, how = progress_child(work, 60)
    return reached >= goal, f"{reached} of {goal} bytes held: {how}", reached


def tmp_limit(targets):
    goal = int(targets.get("tmpProbeBytes", 64 << 20))
    chunk = b"\0" * (1 << 20)
    path = os.path.join(tempfile.gettempdir(), f"escape-probe-fill-{os.getpid()}")

    def work(report):
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a file-size limit answers EFBIG instead of killing
        total = 0
        try:
            with open(path, "wb", buffering=0) as handle:
                while total < goal:
                    try:
                        total += handle.write(chunk)
                    except OSError as error:
                        report(total, f"write refused: {errno_name(error)}")
                        return
                    if total % (8 << 20) == 0:
                        report(total, "writing")
            report(total, "goal reached")
        finally:
            try:
                os.unlink(path)
            except OSError:
                pass

    written, how = progress_child(work, 60)
    try:
        os.unlink(path)
    except OSError:
        pass
    return written >= goal, f"{written} of {goal} bytes written to {path}: {how}", written


def fd_limit(targets):
    cap = 100000

    def work(report):
        fds, stopped = [], "cap reached"
        try:
            while len(fds) < cap:
                try:
                    fds.append(os.open("/dev/null", os.O_RDONLY))
                except OSError as error:
                    stopped = f"open refused: {errno_name(error)}"
                    break
            report(len(fds), stopped)
        finally:
            for fd in fds:
                os.close(fd)

    count, how = progress_child(work, 60)
    limit = targets.get("maxOpenFiles", cap)
    return count > limit, f"{count} descriptors opened (limit {limit}): {how}", count


# --- the run -------------------------------------------------------------------------------------


GROUPS = [
    ("caps", "many", lambda t, x: caps()),
    ("inherited-fds", "one", lambda t, x: inherited_fds()),
    ("secrets", "many", lambda t, x: secret_files(t)),
    ("proc-environ-cmdline", "one", lambda t, x: proc_scan(t, x)),
    ("ptrace", "many", lambda t, x: ptrace_attempts(t)),
    ("signals", "many", lambda t, x: signal_attempts(t)),
    ("writes", "many", lambda t, x: write_attempts(t) + setuid_attempts(t)),
    ("sockets", "many", lambda t, x: socket_attempts(t)),
    ("mounts", "many", lambda t, x: [tuple(e) for e in in_child(lambda: mount_family(t), 30)]),
    ("chroot", "one", lambda t, x: tuple(in_child(chroot_attempt))),
    ("handles", "many", lambda t, x: handle_attempts(t)),
    ("namespaces", "many", lambda t, x: namespace_attempts() + other_abi_attempts()),
    ("kernel", "many", lambda t, x: kernel_attempts()),
    ("limit-open-files", "one", lambda t, x: fd_limit(t)),
    ("limit-tmp", "one", lambda t, x: tmp_limit(t)),
    ("limit-memory", "one", lambda t, x: memory_limit(t)),
    ("limit-processes", "one", lambda t, x: fork_limit(t)),
]


def run_all(targets, exclude_text=None):
    """Every group of attempts, or those targets["only"] names (a limit a host enforces by ending the run is tried alone)."""
    only = targets.get("only")
    report = Report()
    for name, shape, fn in GROUPS:
        if only is not None and name not in only:
            continue
        if shape == "many":
            report.guard_many(name, fn, targets, exclude_text)
        else:
            report.guard(name, fn, targets, exclude_text)
    return {"attempts": report.attempts}


# --- tool mode (protocol 0.1) --------------------------------------------------------------------

_write_lock = threading.Lock()


def send(message):
    body = json.dumps(message).encode("utf-8")
    with _write_lock:
        sys.stdout.buffer.write(struct.pack(">I", len(body)) + body)
        sys.stdout.buffer.flush()


def read_frame(stream):
    header = stream.read(4)
    if len(header) < 4:
        return None
    (length,) = struct.unpack(">I", header)
    body = stream.read(length)
    if len(body) < length:
        return None
    return json.loads(body.decode("utf-8"))


TOOLS = [
    {
        "name": "try",
        "description": "Try every escape from the sandbox against the given targets and report what worked.",
        "input_schema": {"type": "object", "additionalProperties": True},
        "required_scope": "sandbox:probe",
    },
    {
        "name": "daemon",
        "description": "Leave a setsid daemon behind that holds stdout open and sleeps 600 s, marker in its argv.",
        "input_schema": {"type": "object", "properties": {"marker": {"type": "string"}}, "required": ["marker"]},
        "required_scope": "sandbox:probe",
    },
]


def start_daemon(marker):
    # The daemon closes `ready` once it runs with the marker in its argv; the call returns after that.
    ready_read, ready_write = os.pipe()
    child = os.fork()
    if child == 0:
        try:
            os.setsid()
            if os.fork() == 0:
                # Holds fds 0-2 (the tool's pipes), ignores the polite signals, and sleeps.
                os.set_inheritable(ready_write, True)
                code = (
                    "import os, signal, sys, time\n"
                    "for s in (1, 2, 15):\n    signal.signal(s, signal.SIG_IGN)\n"
                    "os.close(int(sys.argv[2]))\ntime.sleep(600)"
                )
                os.execv(sys.executable, [sys.executable, "-c", code, marker, str(ready_write)])
        finally:
            os._exit(0)
    os.close(ready_write)
    reap(child, 10)
    ready, _, _ = select.select([ready_read], [], [], 10)
    os.close(ready_read)
    return {"daemon": "started" if ready else "not seen starting", "marker": marker}


def run_call(message):
    call_id = message["call_id"]
    try:
        name, data = message.get("tool_name"), message.get("input") or {}
        if name == "try":
            output = run_all(data)
        elif name == "daemon":
            output = start_daemon(str(data["marker"]))
        else:
            send({"type": "ToolError", "call_id": call_id, "code": "unknown_tool", "message": f"no tool {name!r}"})
            return
        send({"type": "ToolResult", "call_id": call_id, "verified": "NotApplicable", "output": output})
    except Exception as error:  # noqa: BLE001
        send({"type": "ToolError", "call_id": call_id, "code": "invocation_failed", "message": f"{type(error).__name__}: {error}"})


def serve():
    stdin = sys.stdin.buffer
    while True:
        message = read_frame(stdin)
        if message is None:
            return
        kind = message.get("type")
        if kind == "ToolHello":
            send({"type": "ToolRegister", "tool_process_name": "escape", "tools": TOOLS})
        elif kind == "InvokeTool":
            threading.Thread(target=run_call, args=(message,), daemon=True).start()
        elif kind == "ToolShutdown":
            return


def main():
    if sys.argv[1:] == ["--tool"]:
        serve()
        return
    if len(sys.argv) != 2:
        print("usage: escape-probe.py '<targets JSON>' | --tool", file=sys.stderr)
        sys.exit(2)
    print(json.dumps(run_all(json.loads(sys.argv[1]), exclude_text=sys.argv[1])), flush=True)


if __name__ == "__main__":
    main()
