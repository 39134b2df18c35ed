"""kopt's evaluation worker: a JSON-lines server (docs/worker-protocol.md).

    PYTHONPATH=<repo>/python python3 -m kopt.worker --device cuda:0|cpu [--sandbox SCRATCH]

It executes requests mechanically and returns raw facts; no verdicts here.
"""

from __future__ import annotations

import argparse
import faulthandler
import gc
import json
import math
import os
import sys
import traceback
from typing import Any, Optional

SENTINEL = 1e300


def sanitize(x: Any) -> Any:
    """JSON-safe copy: NaN/inf become the finite sentinel ±1e300, tensors and
    numpy scalars become Python numbers, tuples become lists."""
    if isinstance(x, bool) or x is None or isinstance(x, str):
        return x
    if isinstance(x, int):
        return x
    if isinstance(x, float):
        if math.isnan(x):
            return SENTINEL
        if math.isinf(x):
            return SENTINEL if x > 0 else -SENTINEL
        return x
    if isinstance(x, dict):
        return {str(k): sanitize(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [sanitize(v) for v in x]
    item = getattr(x, "item", None)
    if callable(item):
        try:
            return sanitize(item())
        except Exception:
            pass
    return str(x)


class Channel:
    """The protocol's private stdin/stdout; fd 1 then points at stderr and fd 0
    at /dev/null, so candidates cannot read or corrupt the stream."""

    def __init__(self):
        sys.stdout.flush()
        self.out_fd = os.dup(1)
        self.in_fd = os.dup(0)
        os.dup2(2, 1)
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.close(devnull)
        self.reader = os.fdopen(self.in_fd, "rb", buffering=0)
        self._buf = b""

    def send(self, obj: dict) -> None:
        data = (json.dumps(sanitize(obj), allow_nan=False, separators=(",", ":")) + "\n").encode()
        view = memoryview(data)
        while view:
            n = os.write(self.out_fd, view)
            view = view[n:]

    def recv(self) -> Optional[bytes]:
        while b"\n" not in self._buf:
            chunk = os.read(self.in_fd, 1 << 16)
            if not chunk:
                if self._buf:
                    line, self._buf = self._buf, b""
                    return line
                return None
            self._buf += chunk
        line, self._buf = self._buf.split(b"\n", 1)
        return line


def _sandbox_report() -> Optional[dict]:
    from . import sandbox

    return sandbox.report()


def _hello(req, device) -> dict:
    import torch

    return {"torch": torch.__version__, "cuda": torch.version.cuda, "device": device.info(),
            "pid": os.getpid(), "python": sys.version.split()[0], "sandbox": _sandbox_report()}


def _enter_sandbox(opts: Optional[dict]) -> None:
    """Applies the OS sandbox (kopt/sandbox.py); failures are reported, not fatal."""
    if not opts:
        return
    from . import sandbox

    try:
        sandbox.enter(opts["scratch"], opts.get("allow") or (), order=opts.get("order", "early"))
    except Exception as e:  # noqa: BLE001
        traceback.print_exc()
        sandbox.unavailable_report(opts["scratch"], f"{type(e).__name__}: {e}", opts.get("order", "early"))
    rep = sandbox.report() or {}
    print(f"kopt.worker: sandbox: network {rep.get('network')}; filesystem {rep.get('filesystem')}; "
          f"seccomp {rep.get('seccomp')}", file=sys.stderr)


def _dispatch(op: str, req: dict, device) -> dict:
    if op == "hello":
        return _hello(req, device)
    if op == "capture":
        from .capture import run_capture

        return run_capture(req, device)
    if op == "graph":
        from .capture import run_graph

        return run_graph(req, device)
    if op == "evaluate":
        from .evaluate import run_evaluate

        return run_evaluate(req, device)
    if op == "time":
        from .evaluate import run_time

        return run_time(req, device)
    if op == "reference":
        from .evaluate import run_reference

        return run_reference(req, device)
    if op == "ceilings":
        from .ceilings import run_ceilings

        return run_ceilings(req, device)
    from .errors import BadRequest

    raise BadRequest(f"unknown op {op!r}")


def serve(device_spec: str, sandbox_opts: Optional[dict] = None) -> int:
    chan = Channel()
    # Where a slow request spends its time: every thread's Python stack on
    # stderr (the worker's log) every KOPT_WORKER_STACKS seconds.
    try:
        every = float(os.environ.get("KOPT_WORKER_STACKS") or 0)
    except ValueError:
        every = 0
    if every > 0:
        faulthandler.dump_traceback_later(every, repeat=True, file=sys.stderr)
    from .errors import BadRequest, classify, violation_message

    late = bool(sandbox_opts) and sandbox_opts.get("order") == "late"
    if sandbox_opts and not late:
        # Before torch is imported: the process is still single-threaded.
        _enter_sandbox(sandbox_opts)
    try:
        from .device import Device

        device = Device(device_spec)
        # Save the clocks, CUDA events, synchronize and the torch functions
        # the checks use, before any candidate can be imported.
        from . import integrity

        # torch._dynamo rebinds torch.manual_seed when first imported, which
        # kopt's own capture (flop counter, profiler), torch.compile baselines
        # and honest candidates all trigger; import it now so the saved
        # references are the ones that stay.
        try:
            import torch._dynamo  # noqa: F401
        except Exception:  # noqa: BLE001  (absent on old torch builds)
            pass
        integrity.install()
        try:
            from . import flags

            flags.snapshot()
        except Exception:  # noqa: BLE001
            traceback.print_exc()
    except Exception as e:  # noqa: BLE001
        traceback.print_exc()
        msg = f"{type(e).__name__}: {e}"
        if sandbox_opts and not late:
            msg += (" (the worker runs sandboxed; if the device opens without the sandbox, try "
                    "KOPT_SANDBOX_ORDER=late, or run kopt without --sandbox)")
        chan.send({"event": "startup_failed", "pid": os.getpid(), "sandbox": _sandbox_report(), "error": {
            "kind": "internal", "message": msg, "fatal": True}})
        return 2
    if late:
        _enter_sandbox(sandbox_opts)
    chan.send({"event": "ready", "pid": os.getpid(), "sandbox": _sandbox_report()})

    while True:
        line = chan.recv()
        if line is None:
            return 0
        if not line.strip():
            continue
        rid = None
        if sandbox_opts:
            from . import sandbox

            sandbox.begin_request()
        try:
            try:
                req = json.loads(line)
            except ValueError as e:
                raise BadRequest(f"invalid JSON: {e}")
            if not isinstance(req, dict):
                raise BadRequest("a request must be a JSON object")
            rid = req.get("id")
            op = req.get("op")
            if not isinstance(op, str):
                raise BadRequest("request lacks `op`")
            if op == "shutdown":
                chan.send({"id": rid, "ok": True})
                sys.stderr.flush()
                os._exit(0)
            reply = _dispatch(op, req, device)
            out = {"id": rid, "ok": True}
            out.update(reply)
            chan.send(out)
        except BaseException as e:  # noqa: BLE001
            if isinstance(e, (SystemExit,)):
                # A candidate calling sys.exit() is a candidate error, not an exit.
                e = RuntimeError(f"SystemExit({e.code}) raised")
            if isinstance(e, KeyboardInterrupt):
                raise
            kind, fatal = classify(e)
            traceback.print_exc(file=sys.stderr)
            msg = f"{type(e).__name__}: {e}" if kind in ("internal",) else str(e)
            if kind == "sandbox_violation":
                msg = violation_message(e) or msg
            where = getattr(e, "kopt_where", None)
            if where and not msg.startswith(where):
                msg = f"{where}: {msg}"
            if len(msg) > 20000:
                msg = msg[:10000] + "\n...\n" + msg[-10000:]
            chan.send({"id": rid, "ok": False, "error": {"kind": kind, "message": msg, "fatal": fatal}})
            if fatal:
                sys.stderr.flush()
                os._exit(3)
            if kind == "oom":
                _free_memory(device)
        finally:
            _after_request(device)


def _free_memory(device) -> None:
    try:
        from .tasks import drop_references

        drop_references()
    except Exception:
        pass
    gc.collect()
    try:
        device.empty_cache()
    except Exception:
        pass


def _after_request(device) -> None:
    try:
        from . import flags

        flags.restore()
    except Exception:
        pass
    gc.collect()
    try:
        device.empty_cache()
    except Exception:
        pass


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python3 -m kopt.worker")
    p.add_argument("--device", default="cuda:0", help="cuda:N or cpu")
    p.add_argument("--sandbox", metavar="SCRATCH", default=None,
                   help="run sandboxed: no network, writes only under SCRATCH (and kopt's caches)")
    p.add_argument("--sandbox-allow", metavar="PATH", action="append", default=[],
                   help="another writable folder under the sandbox (repeatable; e.g. /tmp)")
    p.add_argument("--sandbox-order", choices=("early", "late"),
                   default="late" if os.environ.get("KOPT_SANDBOX_ORDER") == "late" else "early",
                   help="enter the sandbox before torch is imported (early, default) or after the "
                        "device is open (late); default from $KOPT_SANDBOX_ORDER")
    args = p.parse_args(argv)
    opts = None
    if args.sandbox:
        opts = {"scratch": args.sandbox, "allow": args.sandbox_allow, "order": args.sandbox_order}
    return serve(args.device, opts)


if __name__ == "__main__":
    sys.exit(main())
