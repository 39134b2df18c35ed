"""The worker's operating-system sandbox (docs/verification.md, "Sandbox").

`enter(scratch)` is called once, in the worker, before any task or candidate
is loaded. Afterwards the process and everything it starts (nvcc, ninja, a
candidate's subprocesses) has:

- no network: a private network namespace (made through a user namespace
  when possible, else plainly as root with every capability then dropped),
  holding only its own loopback, so connections to other hosts fail with
  ENETUNREACH and nothing listening in the host's namespace is reachable;
- write access only to the scratch folder, kopt's load_cuda cache, the build
  caches named by the environment, a private `/dev/shm` and a few device
  nodes (`/dev/null`, `/dev/nvidia*`, ...), enforced by Landlock; reading and
  executing stay allowed everywhere;
- a seccomp filter refusing Unix-domain sockets (so no connection to local
  daemons such as docker or D-Bus, which a network namespace does not
  cover), io_uring (which seccomp cannot see into) and foreign-ABI syscalls.

Every mechanism is best-effort: what could not be applied is reported (see
`report()`, sent in the worker's `ready` event and `hello` reply), never
silently skipped. Violations surface to Python as OSError/PermissionError;
`describe_violation` turns such an exception into one plain sentence.

Order: `early` (the default) enters the sandbox before torch is imported or
the device opened, while the process is still single-threaded, which a user
namespace and a process-wide Landlock domain require. `late` enters it after
the device is open (for drivers that would not start inside it): the user
namespace is then impossible (root falls back to a plain network namespace),
and Landlock restricts only the thread that enters the sandbox and the
threads it starts later, not threads that already exist.
"""

from __future__ import annotations

import collections
import ctypes
import errno
import glob
import os
import platform
import socket
import struct
import sys
from typing import Iterable, List, Optional, Sequence, Tuple

# ----------------------------------------------------------------------------
# Constants (linux/sched.h, landlock.h, seccomp.h, filter.h, capability.h)

CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
CLONE_NEWNET = 0x40000000

_ARCH = platform.machine()
_SYSCALLS = {
    # name: (x86_64, aarch64)
    "landlock_create_ruleset": (444, 444),
    "landlock_add_rule": (445, 445),
    "landlock_restrict_self": (446, 446),
    "seccomp": (317, 277),
    "socket": (41, 198),
    "io_uring_setup": (425, 425),
    "io_uring_enter": (426, 426),
    "io_uring_register": (427, 427),
    "capset": (126, 91),
}
_AUDIT_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}


def _nr(name: str) -> Optional[int]:
    pair = _SYSCALLS[name]
    if _ARCH == "x86_64":
        return pair[0]
    if _ARCH == "aarch64":
        return pair[1]
    return None


LANDLOCK_CREATE_RULESET_VERSION = 1 << 0
LANDLOCK_RULE_PATH_BENEATH = 1

FS_EXECUTE = 1 << 0
FS_WRITE_FILE = 1 << 1
FS_READ_FILE = 1 << 2
FS_READ_DIR = 1 << 3
FS_REMOVE_DIR = 1 << 4
FS_REMOVE_FILE = 1 << 5
FS_MAKE_CHAR = 1 << 6
FS_MAKE_DIR = 1 << 7
FS_MAKE_REG = 1 << 8
FS_MAKE_SOCK = 1 << 9
FS_MAKE_FIFO = 1 << 10
FS_MAKE_BLOCK = 1 << 11
FS_MAKE_SYM = 1 << 12
FS_REFER = 1 << 13      # ABI 2
FS_TRUNCATE = 1 << 14   # ABI 3
# FS_IOCTL_DEV (1 << 15, ABI 5) is deliberately not handled: GPU drivers live
# on ioctls, and device nodes outside the allow-list cannot be opened for
# writing anyway.
NET_BIND_TCP = 1 << 0     # ABI 4
NET_CONNECT_TCP = 1 << 1  # ABI 4
SCOPE_ABSTRACT_UNIX_SOCKET = 1 << 0  # ABI 6
SCOPE_SIGNAL = 1 << 1                # ABI 6

_FS_READ = FS_EXECUTE | FS_READ_FILE | FS_READ_DIR
_FS_FILE_RIGHTS = FS_EXECUTE | FS_WRITE_FILE | FS_READ_FILE | FS_TRUNCATE

PR_SET_SECCOMP = 22
PR_CAPBSET_DROP = 24
PR_SET_SECUREBITS = 28
PR_SET_NO_NEW_PRIVS = 38
PR_CAP_AMBIENT = 47
PR_CAP_AMBIENT_CLEAR_ALL = 4
SECCOMP_MODE_FILTER = 2
SECCOMP_SET_MODE_FILTER = 1
SECCOMP_FILTER_FLAG_TSYNC = 1
SECCOMP_RET_ALLOW = 0x7FFF0000
SECCOMP_RET_ERRNO = 0x00050000

MS_NOSUID = 2
MS_NODEV = 4

SIOCGIFFLAGS = 0x8913
SIOCSIFFLAGS = 0x8914
IFF_UP = 0x1

# Device nodes that may be opened for writing (GPU drivers need write and
# ioctl on theirs). Everything else under /dev, block devices in particular,
# stays read-only.
_DEVICE_NODES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom")
_DEVICE_GLOBS = ("/dev/nvidia*", "/dev/nvidia-caps/*", "/dev/dri/*")

# Environment variables naming build caches. When the operator set one, its
# folder stays writable; otherwise it is pointed into the scratch folder.
_CACHE_ENV = {
    "TORCH_EXTENSIONS_DIR": "torch_extensions",
    "TORCHINDUCTOR_CACHE_DIR": "torchinductor",
    "TRITON_CACHE_DIR": "triton",
    "CUDA_CACHE_PATH": "nv-compute-cache",
    "PYTORCH_KERNEL_CACHE_PATH": "torch-kernels",
}

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long
_libc.prctl.restype = ctypes.c_int


class _SandboxError(Exception):
    pass


def _err(what: str) -> str:
    e = ctypes.get_errno()
    return f"{what}: {os.strerror(e)} (errno {e})"


def _syscall(name: str, *args) -> int:
    nr = _nr(name)
    if nr is None:
        ctypes.set_errno(errno.ENOSYS)
        return -1
    return _libc.syscall(ctypes.c_long(nr), *args)


def _prctl(option: int, a2: int = 0, a3: int = 0, a4: int = 0, a5: int = 0) -> int:
    return _libc.prctl(ctypes.c_int(option), ctypes.c_ulong(a2), ctypes.c_ulong(a3),
                       ctypes.c_ulong(a4), ctypes.c_ulong(a5))


def thread_count() -> int:
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return 1


# ----------------------------------------------------------------------------
# Network


def _write_file(path: str, text: str) -> None:
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def _loopback_up() -> Optional[str]:
    """Brings `lo` up in the new namespace; returns an error or None."""
    import fcntl

    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            req = struct.pack("16sH22x", b"lo", 0)
            flags = struct.unpack("16sH22x", fcntl.ioctl(s.fileno(), SIOCGIFFLAGS, req))[1]
            fcntl.ioctl(s.fileno(), SIOCSIFFLAGS, struct.pack("16sH22x", b"lo", flags | IFF_UP))
        return None
    except OSError as e:
        return f"loopback stays down: {e}"


def _isolate_network(details: List[str]) -> Tuple[str, str]:
    """Returns (network status, mode) where mode is 'userns', 'netns' or ''."""
    uid, gid = os.geteuid(), os.getegid()
    flags = CLONE_NEWUSER | CLONE_NEWNET | CLONE_NEWNS
    # KOPT_SANDBOX_NO_USERNS=1 skips the user namespace (tests of the fallback).
    skip_userns = os.environ.get("KOPT_SANDBOX_NO_USERNS") == "1"
    if skip_userns:
        ctypes.set_errno(errno.EPERM)
    if not skip_userns and _libc.unshare(ctypes.c_int(flags)) == 0:
        try:
            try:
                _write_file("/proc/self/setgroups", "deny")
            except OSError:
                pass  # kernels before 3.19 have no setgroups file
            _write_file("/proc/self/uid_map", f"{uid} {uid} 1\n")
            _write_file("/proc/self/gid_map", f"{gid} {gid} 1\n")
        except OSError as e:
            details.append(f"user namespace id maps not written ({e}); files are accessed as before")
        # A private /dev/shm: the mount namespace belongs to the new user
        # namespace, so nothing mounted here propagates to the host.
        if _libc.mount(b"tmpfs", b"/dev/shm", b"tmpfs", ctypes.c_ulong(MS_NOSUID | MS_NODEV),
                       b"mode=1777") == 0:
            details.append("/dev/shm is a private tmpfs")
        else:
            details.append(_err("private /dev/shm not mounted (the host's stays writable)"))
        msg = _loopback_up()
        if msg:
            details.append(msg)
        details.append("network: user + network namespace")
        return "isolated", "userns"
    userns_error = ("user namespace skipped (KOPT_SANDBOX_NO_USERNS=1)" if skip_userns
                    else _err("unshare(CLONE_NEWUSER|CLONE_NEWNET)"))
    if ctypes.get_errno() == errno.EINVAL and thread_count() > 1:
        userns_error += f" [{thread_count()} threads running]"
    if os.geteuid() == 0:
        if _libc.unshare(ctypes.c_int(CLONE_NEWNET)) == 0:
            msg = _loopback_up()
            if msg:
                details.append(msg)
            details.append(f"network: network namespace as root, capabilities dropped ({userns_error})")
            if thread_count() > 1:
                details.append("network: only the entering thread and the threads it starts use the new namespace")
            return "isolated", "netns"
        return "unavailable: " + userns_error + "; " + _err("unshare(CLONE_NEWNET)"), ""
    return "unavailable: " + userns_error, ""


def _drop_capabilities(details: List[str]) -> None:
    """Root without user namespace: make root an ordinary uid 0, so it cannot
    setns() back into the host's network namespace, mount, or regain
    capabilities through execve."""
    problems = []
    if _prctl(PR_SET_SECUREBITS, 0x0F) != 0:  # NOROOT, NO_SETUID_FIXUP (+ locks)
        problems.append(_err("securebits"))
    for cap in range(64):
        if _prctl(PR_CAPBSET_DROP, cap) != 0 and ctypes.get_errno() != errno.EINVAL:
            problems.append(_err(f"bounding set drop of {cap}"))
            break
    _prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL)

    class Header(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

    class Data(ctypes.Structure):
        _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32),
                    ("inheritable", ctypes.c_uint32)]

    hdr = Header(0x20080522, 0)
    data = (Data * 2)()
    if _syscall("capset", ctypes.byref(hdr), ctypes.byref(data)) != 0:
        problems.append(_err("capset"))
    if problems:
        details.append("capabilities not fully dropped: " + "; ".join(problems))


# ----------------------------------------------------------------------------
# Filesystem (Landlock)


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64),
                ("scoped", ctypes.c_uint64)]


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def landlock_abi() -> int:
    """The kernel's Landlock ABI version; 0 when unavailable."""
    v = _syscall("landlock_create_ruleset", None, ctypes.c_size_t(0),
                 ctypes.c_uint32(LANDLOCK_CREATE_RULESET_VERSION))
    return int(v) if v > 0 else 0


def _landlock_unavailable_reason() -> str:
    v = _syscall("landlock_create_ruleset", None, ctypes.c_size_t(0),
                 ctypes.c_uint32(LANDLOCK_CREATE_RULESET_VERSION))
    if v > 0:
        return ""
    e = ctypes.get_errno()
    if e == errno.ENOSYS:
        return "landlock unavailable: the kernel has no Landlock syscalls"
    if e == errno.EOPNOTSUPP:
        return "landlock unavailable: Landlock is disabled at boot (lsm=)"
    return f"landlock unavailable: {os.strerror(e)} (errno {e})"


def _apply_landlock(writable: Sequence[str], device_nodes: Sequence[str], deny_tcp: bool,
                    details: List[str]) -> str:
    abi = landlock_abi()
    if abi <= 0:
        raise _SandboxError(_landlock_unavailable_reason())
    handled = (1 << 13) - 1
    if abi >= 2:
        handled |= FS_REFER
    if abi >= 3:
        handled |= FS_TRUNCATE
    attr = _RulesetAttr(handled, 0, 0)
    size = 8
    if abi >= 4 and deny_tcp:
        attr.handled_access_net = NET_BIND_TCP | NET_CONNECT_TCP
        size = 16
    if abi >= 6:
        attr.scoped = SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL
        size = 24
    elif abi >= 4:
        size = 16
    fd = _syscall("landlock_create_ruleset", ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0))
    if fd < 0:
        raise _SandboxError(_err("landlock_create_ruleset"))
    fd = int(fd)
    try:
        def allow(path: str, access: int, is_file: bool) -> bool:
            try:
                pfd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            except OSError as e:
                details.append(f"landlock: no rule for {path} ({e.strerror})")
                return False
            try:
                rule = _PathBeneath((access & _FS_FILE_RIGHTS if is_file else access) & handled, pfd)
                if _syscall("landlock_add_rule", ctypes.c_int(fd), ctypes.c_int(LANDLOCK_RULE_PATH_BENEATH),
                            ctypes.byref(rule), ctypes.c_uint32(0)) != 0:
                    details.append(_err(f"landlock: rule for {path} refused"))
                    return False
                return True
            finally:
                os.close(pfd)

        if not allow("/", _FS_READ, False):
            raise _SandboxError("landlock: cannot allow reading /")
        for path in writable:
            allow(path, handled, False)
        for path in device_nodes:
            if os.path.isdir(path):
                allow(path, _FS_READ | FS_WRITE_FILE | FS_TRUNCATE, False)
            else:
                allow(path, FS_READ_FILE | FS_WRITE_FILE | FS_TRUNCATE, True)
        if _prctl(PR_SET_NO_NEW_PRIVS, 1) != 0:
            raise _SandboxError(_err("prctl(PR_SET_NO_NEW_PRIVS)"))
        if _syscall("landlock_restrict_self", ctypes.c_int(fd), ctypes.c_uint32(0)) != 0:
            raise _SandboxError(_err("landlock_restrict_self"))
    finally:
        os.close(fd)
    if abi >= 6:
        details.append("landlock: signals and abstract Unix sockets scoped to the sandbox")
    return f"landlock v{abi}"


# ----------------------------------------------------------------------------
# seccomp


def _bpf(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
    return struct.pack("HBBI", code, jt, jf, k & 0xFFFFFFFF)


def _seccomp_program(block_unix: bool) -> Optional[bytes]:
    arch = _AUDIT_ARCH.get(_ARCH)
    if arch is None:
        return None
    LD = 0x20  # BPF_LD | BPF_W | BPF_ABS
    JEQ = 0x15
    JGE = 0x35
    RET = 0x06
    deny_eperm = SECCOMP_RET_ERRNO | errno.EPERM
    deny_eacces = SECCOMP_RET_ERRNO | errno.EACCES
    denied = [_nr("io_uring_setup"), _nr("io_uring_enter"), _nr("io_uring_register")]
    # Layout (jump offsets count from the next instruction):
    #  0 ld arch; 1 jeq arch ? 2 : DENY; 2 ld nr; 3 [x86_64] jge 0x40000000 (x32) ? DENY : 4;
    #  then one jeq per denied nr -> DENY; jeq socket -> SOCKET; ret ALLOW;
    #  SOCKET: ld args[0]; jeq AF_UNIX ? DENY_UNIX : ALLOW; ret ALLOW; DENY_UNIX; DENY
    prog: List[tuple] = []
    prog.append(("ld", 4))
    prog.append(("jeq_deny_else_next", arch, True))  # arch mismatch -> deny
    prog.append(("ld", 0))
    if _ARCH == "x86_64":
        prog.append(("jge_deny", 0x40000000))
    for nr in denied:
        prog.append(("jeq_deny", nr))
    if block_unix:
        prog.append(("jeq_socket", _nr("socket")))
    prog.append(("ret", SECCOMP_RET_ALLOW))
    socket_at = len(prog)
    if block_unix:
        prog.append(("ld", 16))
        prog.append(("jeq_deny_unix", socket.AF_UNIX))
        prog.append(("ret", SECCOMP_RET_ALLOW))
    deny_unix_at = len(prog)
    prog.append(("ret", deny_eacces))
    deny_at = len(prog)
    prog.append(("ret", deny_eperm))
    out = b""
    for i, ins in enumerate(prog):
        op = ins[0]
        nxt = i + 1
        if op == "ld":
            out += _bpf(LD, ins[1])
        elif op == "ret":
            out += _bpf(RET, ins[1])
        elif op == "jeq_deny_else_next":
            out += _bpf(JEQ, ins[1], 0, deny_at - nxt)
        elif op == "jge_deny":
            out += _bpf(JGE, ins[1], deny_at - nxt, 0)
        elif op == "jeq_deny":
            out += _bpf(JEQ, ins[1], deny_at - nxt, 0)
        elif op == "jeq_socket":
            out += _bpf(JEQ, ins[1], socket_at - nxt, 0)
        elif op == "jeq_deny_unix":
            out += _bpf(JEQ, ins[1], deny_unix_at - nxt, 0)
        else:  # pragma: no cover
            raise AssertionError(op)
    return out


def _apply_seccomp(block_unix: bool) -> str:
    prog = _seccomp_program(block_unix)
    if prog is None:
        raise _SandboxError(f"seccomp filter not written for {_ARCH}")
    n = len(prog) // 8
    buf = ctypes.create_string_buffer(prog, len(prog))

    class Fprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    fprog = Fprog(n, ctypes.cast(buf, ctypes.c_void_p))
    if _prctl(PR_SET_NO_NEW_PRIVS, 1) != 0:
        raise _SandboxError(_err("prctl(PR_SET_NO_NEW_PRIVS)"))
    rc = _syscall("seccomp", ctypes.c_uint(SECCOMP_SET_MODE_FILTER), ctypes.c_uint(SECCOMP_FILTER_FLAG_TSYNC),
                  ctypes.byref(fprog))
    if rc != 0:
        if ctypes.get_errno() != errno.ENOSYS:
            raise _SandboxError(_err("seccomp"))
        if _prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.addressof(fprog)) != 0:
            raise _SandboxError(_err("prctl(PR_SET_SECCOMP)"))
    what = ["io_uring", "foreign-ABI syscalls"]
    if block_unix:
        what.insert(0, "Unix-domain socket()")
    return "denies " + ", ".join(what)


# ----------------------------------------------------------------------------
# Entering


class _State:
    def __init__(self):
        self.active = False
        self.report: Optional[dict] = None
        self.writable: List[str] = []
        self.writable_real: List[str] = []
        self.devices: List[str] = []
        self.network_isolated = False  # namespace, or TCP denied by Landlock
        self.fs_confined = False
        self.unix_blocked = False
        self.events: "collections.deque" = collections.deque(maxlen=64)
        self.serial = 0
        self.mark = 0


_state = _State()


def report() -> Optional[dict]:
    """What `enter` applied (None when the worker runs without a sandbox)."""
    return _state.report


def active() -> bool:
    return _state.active


def _existing_device_nodes() -> List[str]:
    nodes = [p for p in _DEVICE_NODES if os.path.exists(p)]
    for pattern in _DEVICE_GLOBS:
        nodes.extend(sorted(glob.glob(pattern)))
    return nodes


def _prepare_dir(path: str) -> str:
    path = os.path.abspath(path)
    os.makedirs(path, exist_ok=True)
    return path


def enter(scratch_dir: str, writable_extra: Iterable[str] = (), block_unix_sockets: Optional[bool] = None,
          order: str = "early") -> dict:
    """Sandboxes this process (see the module docstring). Returns the report,
    also kept for `report()`. Never raises for an unavailable mechanism."""
    if _state.report is not None:
        return _state.report
    details: List[str] = []
    if block_unix_sockets is None:
        block_unix_sockets = os.environ.get("KOPT_SANDBOX_UNIX", "") not in ("1", "allow")
    scratch = _prepare_dir(scratch_dir)
    threads_before = thread_count()

    # Writable places, and the environment that points tools at them.
    from . import cache_dir  # KOPT_CACHE, where load_cuda writes

    writable = [scratch]
    try:
        writable.append(_prepare_dir(cache_dir()))
    except OSError as e:
        details.append(f"kopt cache {cache_dir()} not writable: {e}")
    tmp = _prepare_dir(os.path.join(scratch, "tmp"))
    os.environ["TMPDIR"] = tmp
    os.environ["KOPT_SCRATCH"] = scratch
    import tempfile

    tempfile.tempdir = None
    for var, sub in _CACHE_ENV.items():
        if os.environ.get(var):
            try:
                writable.append(_prepare_dir(os.environ[var]))
            except OSError as e:
                details.append(f"{var}={os.environ[var]} not writable: {e}")
        else:
            os.environ[var] = os.path.join(scratch, sub)
    for extra in writable_extra:
        try:
            writable.append(_prepare_dir(extra) if not os.path.exists(extra) else os.path.abspath(extra))
        except OSError as e:
            details.append(f"extra writable {extra}: {e}")
    sys.dont_write_bytecode = True
    os.environ["PYTHONDONTWRITEBYTECODE"] = "1"

    # 1. Network (and, with a user namespace, a private /dev/shm).
    try:
        network, mode = _isolate_network(details)
    except Exception as e:  # noqa: BLE001
        network, mode = f"unavailable: {type(e).__name__}: {e}", ""
    writable.append("/dev/shm")

    # 2. Filesystem.
    deny_tcp = not network.startswith("isolated")
    devices = _existing_device_nodes()
    if os.path.exists("/dev/nvidiactl") and not os.path.exists("/dev/nvidia-uvm"):
        details.append("/dev/nvidia-uvm does not exist yet and cannot be created inside the sandbox: "
                       "if CUDA fails to start, use KOPT_SANDBOX_ORDER=late")
    try:
        filesystem = _apply_landlock(writable, devices, deny_tcp, details)
        if threads_before > 1:
            details.append(f"landlock: {threads_before - 1} thread(s) started before the sandbox are not restricted")
        if deny_tcp and landlock_abi() >= 4:
            network += "; TCP connect/bind denied by landlock (UDP is not)"
    except _SandboxError as e:
        filesystem = "unavailable: " + str(e)
    except Exception as e:  # noqa: BLE001
        filesystem = f"unavailable: {type(e).__name__}: {e}"

    # 3. seccomp.
    try:
        seccomp = _apply_seccomp(block_unix_sockets)
    except _SandboxError as e:
        seccomp = "unavailable: " + str(e)
    except Exception as e:  # noqa: BLE001
        seccomp = f"unavailable: {type(e).__name__}: {e}"

    if mode == "netns":
        _drop_capabilities(details)

    _state.writable = sorted(set(writable))
    _state.writable_real = sorted(set(_state.writable) | {os.path.realpath(w) for w in _state.writable})
    _state.devices = devices
    _state.network_isolated = network == "isolated" or "TCP connect/bind denied" in network
    _state.fs_confined = filesystem.startswith("landlock")
    _state.unix_blocked = block_unix_sockets and seccomp.startswith("denies")
    _state.active = _state.network_isolated or _state.fs_confined or _state.unix_blocked
    _state.report = {
        "network": network,
        "filesystem": filesystem,
        "seccomp": seccomp,
        "scratch": scratch,
        "writable": _state.writable,
        "devices": devices,
        "order": order,
        "details": details,
    }
    try:
        sys.addaudithook(_audit)
    except Exception:  # noqa: BLE001
        pass
    return _state.report


def unavailable_report(scratch_dir: str, why: str, order: str = "early") -> dict:
    """The report when `enter` itself failed."""
    _state.report = {"network": "unavailable: " + why, "filesystem": "unavailable: " + why,
                     "seccomp": "unavailable: " + why, "scratch": os.path.abspath(scratch_dir),
                     "writable": [], "devices": [], "order": order, "details": []}
    return _state.report


# ----------------------------------------------------------------------------
# Recognising violations


_NET_EVENTS = ("socket.connect", "socket.sendto", "socket.bind", "socket.getaddrinfo",
               "socket.gethostbyname", "socket.gethostbyaddr")
_WRITE_EVENTS = {"os.mkdir": 0, "os.rename": 1, "os.remove": 0, "os.rmdir": 0, "os.symlink": 1,
                 "os.link": 1, "os.truncate": 0, "os.chmod": 0, "os.chown": 0, "os.utime": 0,
                 "os.mkfifo": 0, "os.mknod": 0, "shutil.copyfile": 1, "shutil.rmtree": 0,
                 "shutil.move": 1, "shutil.copytree": 1}
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND


def _audit(event: str, args) -> None:
    # Diagnostics only: the operating system enforces; this remembers what the
    # process last tried, so a failure can be explained in one sentence.
    try:
        if event == "open":
            path, mode, flags = args
            if isinstance(path, int):
                return
            if isinstance(mode, str):
                writes = any(c in mode for c in "wax+")
            else:
                writes = bool((flags or 0) & _WRITE_FLAGS)
            if writes:
                _remember("write", path)
        elif event in _WRITE_EVENTS:
            i = _WRITE_EVENTS[event]
            target = args[i] if len(args) > i else args[0]
            if not isinstance(target, int):
                _remember("write", target)
        elif event in _NET_EVENTS:
            if event == "socket.getaddrinfo" or event == "socket.gethostbyname" or event == "socket.gethostbyaddr":
                _remember("resolve", args[0])
            else:
                _remember(event.split(".")[1], args[1] if len(args) > 1 else None)
        elif event == "os.kill" or event == "os.killpg":
            _remember("signal", args[0])
        elif event == "socket.__new__":
            if len(args) > 1 and args[1] == socket.AF_UNIX:
                _remember("unix_socket", None)
    except Exception:  # noqa: BLE001
        pass


def _remember(kind: str, target) -> None:
    _state.serial += 1
    _state.events.append((_state.serial, kind, target))


def begin_request() -> None:
    """Forget what earlier requests attempted."""
    _state.mark = _state.serial


def _recent(kinds: Sequence[str]) -> Optional[tuple]:
    for serial, kind, target in reversed(_state.events):
        if serial <= _state.mark:
            return None
        if kind in kinds:
            return (kind, target)
    return None


def _fspath(p) -> Optional[str]:
    try:
        p = os.fspath(p)
    except TypeError:
        return None
    if isinstance(p, bytes):
        p = os.fsdecode(p)
    return os.path.abspath(p)


def is_writable_path(path: str) -> bool:
    """True when the sandbox lets this process write `path`."""
    for p in {path, os.path.realpath(path)}:
        for root in _state.writable_real:
            if p == root or p.startswith(root.rstrip("/") + "/"):
                return True
        if p in _state.devices:
            return True
    return False


_NET_ERRNOS = {errno.ENETUNREACH, errno.EHOSTUNREACH, errno.ECONNREFUSED, errno.ENETDOWN,
               errno.EADDRNOTAVAIL, errno.EACCES, errno.EPERM, errno.ETIMEDOUT}
_WRITE_ERRNOS = {errno.EACCES, errno.EPERM, errno.EROFS}


def _describe_one(e: BaseException, who: str) -> Optional[str]:
    if not isinstance(e, OSError):
        return None
    brief = f"{type(e).__name__}: {e}"
    if isinstance(e, socket.gaierror) and _state.network_isolated:
        hit = _recent(("resolve",))
        host = f" (looking up {hit[1]!r})" if hit and hit[1] else ""
        return f"{who} tried to open a network connection{host}; the sandbox has no network ({brief})"
    code = e.errno
    # Files first: an error naming a path outside the writable places.
    if code in _WRITE_ERRNOS and _state.fs_confined:
        for name in (e.filename, getattr(e, "filename2", None)):
            if name is None or isinstance(name, int):
                continue
            path = _fspath(name)
            if path is None or is_writable_path(path):
                continue
            tried = any(kind == "write" and _fspath(t) == path for s, kind, t in _state.events if s > _state.mark)
            readable_problem = os.path.exists(path) and not os.access(path, os.R_OK)
            if tried or code == errno.EROFS or not readable_problem:
                return f"{who} tried to write {path} outside its scratch directory ({brief})"
    if code in _NET_ERRNOS:
        hit = _recent(("connect", "sendto", "bind", "unix_socket", "write", "signal"))
        if hit and hit[0] == "signal" and code == errno.EPERM and _state.fs_confined:
            return f"{who} tried to signal process {hit[1]} outside its sandbox ({brief})"
        if hit and hit[0] in ("connect", "sendto", "bind") and _state.network_isolated:
            return (f"{who} tried to open a network connection to {_addr(hit[1])}; the sandbox has no "
                    f"network ({brief})")
        if hit and hit[0] == "unix_socket" and code == errno.EACCES and _state.unix_blocked:
            return f"{who} tried to open a local (Unix-domain) socket, which the sandbox forbids ({brief})"
        if hit and hit[0] == "write" and code in _WRITE_ERRNOS and e.filename is None and _state.fs_confined:
            path = _fspath(hit[1])
            if path is not None and not is_writable_path(path):
                return f"{who} tried to write {path} outside its scratch directory ({brief})"
    return None


def _addr(a) -> str:
    if isinstance(a, tuple) and len(a) >= 2:
        return f"{a[0]}:{a[1]}"
    if isinstance(a, (str, bytes)):
        return os.fsdecode(a) if isinstance(a, bytes) else a
    return repr(a)


def describe_violation(e: BaseException, who: str = "the candidate") -> Optional[str]:
    """One sentence when `e` (or an exception in its cause/context chain) is
    the sandbox refusing a write outside the writable places or a network
    connection; None otherwise, or when no sandbox is active."""
    if not _state.active:
        return None
    seen = set()
    probe: Optional[BaseException] = e
    while probe is not None and id(probe) not in seen:
        seen.add(id(probe))
        msg = _describe_one(probe, who)
        if msg:
            return msg
        nxt = getattr(probe, "cause", None)
        probe = nxt if isinstance(nxt, BaseException) and id(nxt) not in seen else (
            probe.__cause__ or probe.__context__)
    return None
