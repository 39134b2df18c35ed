"""The kernels a hybrid candidate (a KernelBench ModelNew file) launches, per
knob setting, beside eager PyTorch's: where its time goes.

    KOPT_BIN=.devbin/kopt PYTHONPATH=python python3 bench/s28/replay_kernels.py \
        TASK.py CANDIDATE.py [KNOB=V,KNOB=V ...]

Each argument after the candidate is one setting of its module-level knobs
(the defaults run first).
"""
import importlib.util
import sys

import torch

sys.path.insert(0, "bench/s28")
from torch_kernels import show  # noqa: E402


def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def main():
    task, cand = sys.argv[1], sys.argv[2]
    torch.manual_seed(0)
    t = load(task, "task")
    c = load(cand, "candidate")
    inputs = [x.cuda() if torch.is_tensor(x) else x for x in t.get_inputs()]
    ref = t.Model(*t.get_init_inputs()).cuda().eval()
    new = c.ModelNew(*t.get_init_inputs()).cuda().eval()
    new.load_state_dict(ref.state_dict())
    show("eager", ref, inputs)
    for setting in ["default"] + sys.argv[3:]:
        if setting != "default":
            for kv in setting.split(","):
                k, v = kv.split("=")
                setattr(c, k, int(v))
        with torch.no_grad():
            err = (new(*inputs) - ref(*inputs)).abs().max().item()
        show(f"candidate {setting} (max abs diff {err:.3g})", new, inputs)


if __name__ == "__main__":
    main()
