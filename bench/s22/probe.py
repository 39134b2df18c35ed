# Session 22 probe on the GPU: (1) where eager, torch.compile and kopt's
# replay spend their GPU time on the conv networks (kernel tables); (2) does
# running a replay in a process slow the compiled reference there (the
# "torch.compile baseline ran 1.27x slower beside the candidate" verdict)?
#   PYTHONPATH=python KOPT_BIN=.devbin/kopt python bench/s22/probe.py TASK REPLAY
import runpy, sys
import torch
from cudatime import median_ms
from torch.profiler import profile, ProfilerActivity

task, replay = sys.argv[1], sys.argv[2]


t = lambda fn, n=30: median_ms(fn, n)


def table(label, fn):
    with profile(activities=[ProfilerActivity.CUDA]) as p:
        for _ in range(3):
            fn()
        torch.cuda.synchronize()
    print(f"--- {label} (3 calls)")
    print(p.key_averages().table(sort_by="cuda_time_total", row_limit=16, max_name_column_width=90))


m = runpy.run_path(task)
r = runpy.run_path(replay)
torch.manual_seed(0)
ref = m["Model"](*m["get_init_inputs"]()).cuda()
torch.manual_seed(0)
new = r["ModelNew"](*r["get_init_inputs"]()).cuda()
torch.manual_seed(0)
xs = [x.cuda() for x in m["get_inputs"]()]
print(torch.cuda.get_device_name(), torch.__version__, "cudnn.benchmark", torch.backends.cudnn.benchmark)
with torch.no_grad():
    comp = torch.compile(ref)
    comp(*xs)
    e0, c0 = t(lambda: ref(*xs)), t(lambda: comp(*xs))
    print(f"clean: eager {e0:.3f} ms, compile {c0:.3f} ms")
    table("eager", lambda: ref(*xs))
    table("compile", lambda: comp(*xs))
    n0 = t(lambda: new(*xs))
    print(f"replay {n0:.3f} ms; cudnn.benchmark after it: {torch.backends.cudnn.benchmark}")
    for i in range(3):
        e1, c1, n1 = t(lambda: ref(*xs)), t(lambda: comp(*xs)), t(lambda: new(*xs))
        print(f"round {i} beside the replay: eager {e1:.3f} ({e1 / e0:.2f}x clean), "
              f"compile {c1:.3f} ({c1 / c0:.2f}x clean), replay {n1:.3f}")
    table("compile beside the replay", lambda: comp(*xs))
    table("replay", lambda: new(*xs))
