"""The worker's OS sandbox (`--sandbox SCRATCH`, python/kopt/sandbox.py):
attack candidates against the real worker, on cpu.

Each attack is also run against an unsandboxed worker, so a passing test
shows the sandbox stopped something that otherwise works."""

import ctypes
import errno
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import uuid

import pytest

from conftest import PYTHON_DIR, Worker, data

REPO = os.path.dirname(PYTHON_DIR)
CLONE_NEWUSER = 0x10000000
CLONE_NEWNET = 0x40000000


def _netns_unavailable() -> str:
    """'' when this machine lets a process make a network namespace (through
    a user namespace, or as root); else the reason. Probed in a child."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: one syscall, then _exit
        os.close(r)
        libc = ctypes.CDLL(None, use_errno=True)
        rc = libc.unshare(CLONE_NEWUSER | CLONE_NEWNET)
        if rc != 0 and os.geteuid() == 0:
            rc = libc.unshare(CLONE_NEWNET)
        os.write(w, b"ok" if rc == 0 else os.strerror(ctypes.get_errno()).encode())
        os._exit(0)
    os.close(w)
    out = os.read(r, 200).decode()
    os.close(r)
    os.waitpid(pid, 0)
    return "" if out == "ok" else f"this machine cannot create a network namespace: {out}"


def _landlock_unavailable() -> str:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    if os.uname().machine not in ("x86_64", "aarch64"):
        return "Landlock probe only written for x86_64/aarch64"
    v = libc.syscall(ctypes.c_long(444), None, ctypes.c_size_t(0), ctypes.c_uint32(1))
    if v > 0:
        return ""
    e = ctypes.get_errno()
    return f"this kernel has no usable Landlock: {os.strerror(e)} (errno {e})"


NETNS_MISSING = _netns_unavailable()
LANDLOCK_MISSING = _landlock_unavailable()


class LaunchedWorker(Worker):
    """conftest's Worker with extra command-line arguments."""

    def __init__(self, args=(), env=None):
        e = dict(os.environ)
        e["PYTHONPATH"] = PYTHON_DIR + (os.pathsep + e["PYTHONPATH"] if e.get("PYTHONPATH") else "")
        e.update(env or {})
        self.stderr = tempfile.TemporaryFile()
        self.proc = subprocess.Popen([sys.executable, "-m", "kopt.worker", "--device", "cpu", *args],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.stderr,
                                     env=e, cwd=PYTHON_DIR)
        self.raw_lines = []
        self.next_id = 1
        self.ready = self._read()


@pytest.fixture(scope="module")
def place():
    """Scratch folder, kopt cache and the attack configuration file."""
    root = tempfile.mkdtemp(prefix="kopt-sandbox-test-")
    p = {"root": root, "scratch": os.path.join(root, "scratch"), "cache": os.path.join(root, "cache", "so"),
         "config": os.path.join(root, "escape.json")}
    with open(p["config"], "w") as f:
        json.dump({}, f)
    yield p
    shutil.rmtree(root, ignore_errors=True)


def _env(place):
    return {"KOPT_CACHE": place["cache"], "KOPT_ESCAPE_CONFIG": place["config"]}


@pytest.fixture(scope="module")
def sandboxed(place):
    w = LaunchedWorker(["--sandbox", place["scratch"]], _env(place))
    yield w
    w.close()


@pytest.fixture(scope="module")
def unsandboxed(place):
    w = LaunchedWorker([], _env(place))
    yield w
    w.close()


def need_sandbox():
    if NETNS_MISSING:
        pytest.skip(NETNS_MISSING)
    if LANDLOCK_MISSING:
        pytest.skip(LANDLOCK_MISSING)


def configure(place, **cfg):
    with open(place["config"], "w") as f:
        json.dump(cfg, f)


def evaluate(worker, cand):
    return worker.call("evaluate", task=data("linear_relu.py"), candidate={"kind": "hybrid", "path": data(cand)},
                       seeds=[11], kernelbench_tol={"atol": 1e-4, "rtol": 1e-4}, fp64=False, timing=None)


def assert_violation(reply, worker, words):
    assert reply["ok"] is False, reply
    err = reply["error"]
    assert err["kind"] == "sandbox_violation", (err, worker.stderr_text()[-3000:])
    assert err["fatal"] is False
    assert words in err["message"], err["message"]
    assert worker.call("hello")["ok"]  # the worker carries on


def assert_passed(reply):
    assert reply["ok"], reply
    out = reply["checks"][0]["outputs"][0]
    assert out["shape_ok"] and out["vs_ref32"]["worst_ratio"] < 1


def test_hello_reports_the_sandbox(sandboxed, place):
    need_sandbox()
    for rep in (sandboxed.ready["sandbox"], sandboxed.call("hello")["sandbox"]):
        assert rep["network"] == "isolated", rep
        assert rep["filesystem"].startswith("landlock v"), rep
        assert rep["scratch"] == os.path.abspath(place["scratch"])
        assert rep["order"] == "early"
        assert os.path.abspath(place["cache"]) in rep["writable"]
        assert rep["seccomp"].startswith("denies"), rep


def test_unsandboxed_hello_says_so(unsandboxed):
    assert unsandboxed.ready["sandbox"] is None
    assert unsandboxed.call("hello")["sandbox"] is None


def test_remote_connection_is_refused(sandboxed, place):
    need_sandbox()
    configure(place, connect=["tcp:1.1.1.1:80"])
    r = evaluate(sandboxed, "linear_relu_net_escape.py")
    assert_violation(r, sandboxed, "network connection to 1.1.1.1:80")
    assert "Network is unreachable" in r["error"]["message"]  # no route at all: only an isolated loopback


@pytest.fixture
def tcp_listener():
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind(("127.0.0.1", 0))
    s.listen(4)
    s.settimeout(0.5)
    yield s
    s.close()


def _accepted(listener) -> bytes:
    """What a client sent, or b'' when nobody connected."""
    try:
        conn, _ = listener.accept()
    except socket.timeout:
        return b""
    with conn:
        conn.settimeout(2)
        try:
            return conn.recv(100) or b"(connected)"
        except socket.timeout:
            return b"(connected)"


def test_local_listener_is_unreachable(sandboxed, unsandboxed, place, tcp_listener):
    need_sandbox()
    port = tcp_listener.getsockname()[1]
    configure(place, connect=[f"tcp:127.0.0.1:{port}"])
    r = evaluate(sandboxed, "linear_relu_net_escape.py")
    assert_violation(r, sandboxed, f"network connection to 127.0.0.1:{port}")
    assert _accepted(tcp_listener) == b""
    # Control: without the sandbox the same candidate connects and passes.
    assert_passed(evaluate(unsandboxed, "linear_relu_net_escape.py"))
    assert _accepted(tcp_listener) == b"escaped"


def test_unix_socket_is_refused(sandboxed, unsandboxed, place):
    need_sandbox()
    path = os.path.join(place["root"], "listener.sock")
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(path)
    s.listen(4)
    s.settimeout(0.5)
    try:
        configure(place, connect=[f"unix:{path}"])
        r = evaluate(sandboxed, "linear_relu_net_escape.py")
        assert_violation(r, sandboxed, "(Unix-domain) socket")
        assert _accepted(s) == b""
        assert_passed(evaluate(unsandboxed, "linear_relu_net_escape.py"))
        assert _accepted(s) == b"escaped"
    finally:
        s.close()


def test_writes_outside_scratch_are_refused(sandboxed, unsandboxed, place):
    need_sandbox()
    tag = uuid.uuid4().hex
    targets = [f"/tmp/kopt-escape-{tag}", os.path.join(REPO, f"kopt-escape-{tag}"),
               os.path.join(place["root"], f"kopt-escape-{tag}")]
    files = targets + [t + ".libc" for t in targets]
    configure(place, write=targets)
    try:
        r = evaluate(sandboxed, "linear_relu_write_escape.py")
        assert_violation(r, sandboxed, "outside its scratch directory")
        assert targets[0] in r["error"]["message"]
        assert [f for f in files if os.path.exists(f)] == []
        # Control: without the sandbox every write (libc's and Python's) lands.
        assert_passed(evaluate(unsandboxed, "linear_relu_write_escape.py"))
        assert [f for f in files if not os.path.exists(f)] == []
    finally:
        for f in files:
            if os.path.exists(f):
                os.unlink(f)


def test_writes_inside_scratch_pass(sandboxed, place):
    need_sandbox()
    r = evaluate(sandboxed, "linear_relu_scratch_write.py")
    assert_passed(r)
    with open(os.path.join(place["scratch"], "candidate-notes.txt")) as f:
        assert f.read() == "allowed\n"


def test_ordinary_requests_work_sandboxed(sandboxed):
    need_sandbox()
    r = sandboxed.call("capture", task=data("linear_relu.py"), seeds=[0, 1], profile=True)
    assert r["ok"], r
    assert_passed(evaluate(sandboxed, "linear_relu_ok.py"))
    r = sandboxed.call("time", task=data("linear_relu.py"), candidate={"kind": "hybrid", "path": data("linear_relu_ok.py")},
                       timing={"min_reps": 3, "max_reps": 5, "max_seconds": 0.5, "warmup_ms": 1})
    assert r["ok"], r


def test_late_order(place):
    need_sandbox()
    w = LaunchedWorker(["--sandbox", place["scratch"], "--sandbox-order", "late"], _env(place))
    try:
        rep = w.call("hello")["sandbox"]
        assert rep["order"] == "late"
        assert rep["filesystem"].startswith("landlock v"), rep
        assert rep["network"] == "isolated", rep
        tag = uuid.uuid4().hex
        target = f"/tmp/kopt-escape-{tag}"
        configure(place, write=[target])
        assert_violation(evaluate(w, "linear_relu_write_escape.py"), w, "outside its scratch directory")
        assert not os.path.exists(target) and not os.path.exists(target + ".libc")
    finally:
        w.close()


def test_violation_messages_need_an_active_sandbox():
    from kopt import errors

    e = errors.CandidateRunError("candidate raised", PermissionError(errno.EACCES, "Permission denied", "/etc/x"))
    assert errors.classify(e) == ("candidate_error", False)
    assert errors.violation_message(e) is None


def test_root_fallback_without_user_namespace(place, tcp_listener):
    """As root, with no user namespace: a plain network namespace, then every
    capability dropped (so the worker cannot setns() back)."""
    need_sandbox()
    if os.geteuid() != 0:
        pytest.skip("the fallback without a user namespace is for root only")
    w = LaunchedWorker(["--sandbox", place["scratch"]], dict(_env(place), KOPT_SANDBOX_NO_USERNS="1"))
    try:
        rep = w.call("hello")["sandbox"]
        assert rep["network"] == "isolated", rep
        assert any("capabilities dropped" in d for d in rep["details"]), rep
        assert not any("capabilities not fully dropped" in d for d in rep["details"]), rep
        port = tcp_listener.getsockname()[1]
        configure(place, connect=[f"tcp:127.0.0.1:{port}"])
        assert_violation(evaluate(w, "linear_relu_net_escape.py"), w, "network connection")
        assert _accepted(tcp_listener) == b""
        with open(f"/proc/{w.proc.pid}/status") as f:
            caps = {k: v.strip() for k, v in (line.split(":", 1) for line in f if line.startswith("Cap"))}
        assert caps["CapEff"] == caps["CapPrm"] == caps["CapBnd"] == "0" * 16, caps
    finally:
        w.close()
