"""Records the op graph (kopt capture's `graph`, GRAPH_VERSION 2) of every
task in tasks/ on PyTorch's meta device: shapes and dataflow without running
any arithmetic, so it works on a CPU-only machine in seconds.

    /usr/bin/python3 tests/data/graphs/record.py    # from the repository root

Writes tests/data/graphs/<level>_<stem>.json; a task whose ops meta tensors
cannot run, or whose graph is over MAX_BYTES, is listed and skipped."""

import json
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "python"))

import torch  # noqa: E402

from kopt.capture import record_graph  # noqa: E402
from kopt.inputs import make_inputs  # noqa: E402
from kopt.tasks import get_reference  # noqa: E402


MAX_BYTES = 400_000


def main() -> int:
    out_dir = pathlib.Path(__file__).resolve().parent
    meta = torch.device("meta")
    skipped = []
    for task_file in sorted((ROOT / "tasks").glob("level*/*.py")):
        name = f"{task_file.parent.name}_{task_file.stem}"
        try:
            task, ref = get_reference(str(task_file), meta, 42)
            args = make_inputs(task, 0, meta)
            graph = record_graph(ref, args, 0)
            if not graph["nodes"]:
                raise RuntimeError("no ops recorded")
        except Exception as e:  # noqa: BLE001 - report and go on
            skipped.append(f"{name}: {type(e).__name__}: {str(e).splitlines()[0][:120]}")
            continue
        graph["task"] = f"{task_file.parent.name}/{task_file.name}"
        text = json.dumps(graph, indent=1, sort_keys=True) + "\n"
        if len(text) > MAX_BYTES:  # e.g. an LSTM unrolled into thousands of ops on meta
            skipped.append(f"{name}: {len(text)} bytes, over {MAX_BYTES}")
            continue
        (out_dir / f"{name}.json").write_text(text)
    for s in skipped:
        print("skipped", s)
    return 0


if __name__ == "__main__":
    sys.exit(main())
