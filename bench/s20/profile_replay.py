# Where a replay's time goes on the GPU: eager, torch.compile and the replay
# (a hybrid ModelNew file) under torch.profiler, kernel table per contender.
#   KOPT_BIN=.devbin/kopt python bench/s20/profile_replay.py REPLAY.py [KNOB=V ...]
import re, runpy, statistics, sys
import torch
from torch.profiler import profile, ProfilerActivity

path = sys.argv[1]
src = open(path).read()
for kv in sys.argv[2:]:
    k, v = kv.split("=")
    src = re.sub(r"(?m)^%s = \d+  # kopt:knob" % k, "%s = %s  # kopt:knob" % (k, v), src)
open(path + ".set.py", "w").write(src)
m = runpy.run_path(path + ".set.py")
torch.manual_seed(0)
ref = m["Model"](*m["get_init_inputs"]()).cuda()
torch.manual_seed(0)
new = m["ModelNew"](*m["get_init_inputs"]()).cuda()
xs = [x.cuda() for x in m["get_inputs"]()]


def t(fn, n=20):
    fn(); torch.cuda.synchronize()
    ts = []
    for _ in range(n):
        a = torch.cuda.Event(enable_timing=True); b = torch.cuda.Event(enable_timing=True)
        a.record(); fn(); b.record(); torch.cuda.synchronize(); ts.append(a.elapsed_time(b))
    return statistics.median(ts)


with torch.no_grad():
    comp = torch.compile(ref)
    comp(*xs)
    print(f"{path} {sys.argv[2:]}: eager {t(lambda: ref(*xs)):.3f} ms, compile {t(lambda: comp(*xs)):.3f} ms, "
          f"replay {t(lambda: new(*xs)):.3f} ms")
    with profile(activities=[ProfilerActivity.CUDA]) as p:
        for _ in range(3):
            new(*xs)
        torch.cuda.synchronize()
    print(p.key_averages().table(sort_by="cuda_time_total", row_limit=14, max_name_column_width=70))
