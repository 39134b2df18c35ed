import json
import os
import subprocess
import sys
import tempfile

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON_DIR = os.path.dirname(HERE)
DATA = os.path.join(HERE, "data")


def _reject_constant(name):
    raise ValueError(f"non-JSON number token {name} in the stream")


def strict_loads(line: str):
    return json.loads(line, parse_constant=_reject_constant)


class Worker:
    """The real worker as a subprocess, spoken to over its JSON-lines protocol."""

    def __init__(self, device="cpu", env=None):
        e = dict(os.environ)
        e["PYTHONPATH"] = PYTHON_DIR + (os.pathsep + e["PYTHONPATH"] if e.get("PYTHONPATH") else "")
        e.update(env or {})
        self.stderr = tempfile.TemporaryFile()
        self.proc = subprocess.Popen([sys.executable, "-m", "kopt.worker", "--device", device],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.stderr,
                                     env=e, cwd=PYTHON_DIR)
        self.raw_lines = []
        self.next_id = 1
        self.ready = self._read()

    def _read(self):
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError("worker closed its stdout; stderr:\n" + self.stderr_text())
        text = line.decode()
        self.raw_lines.append(text)
        return strict_loads(text)

    def stderr_text(self):
        self.stderr.seek(0)
        return self.stderr.read().decode(errors="replace")

    def call(self, op, **fields):
        rid = self.next_id
        self.next_id += 1
        req = {"id": rid, "op": op}
        req.update(fields)
        self.send_raw(json.dumps(req))
        reply = self._read()
        assert reply.get("id") == rid, (reply, self.stderr_text()[-3000:])
        return reply

    def send_raw(self, text):
        self.proc.stdin.write(text.encode() + b"\n")
        self.proc.stdin.flush()

    def read(self):
        return self._read()

    def close(self):
        if self.proc.poll() is None:
            try:
                self.proc.stdin.close()
            except OSError:
                pass
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


@pytest.fixture(scope="session")
def worker():
    w = Worker()
    yield w
    w.close()


def data(name):
    return os.path.join(DATA, name)
