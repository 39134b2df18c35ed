# Session 20 diagnostics on the GPU: fp32 GEMM rates (SGEMM vs TF32) at the
# suite's GEMM shapes, and what torch.compile does to the conv networks.
#   python bench/s20/diag.py OUT
import os, sys, importlib.util, statistics
import torch
out = sys.argv[1]
torch.manual_seed(0)
def t(fn, n=20):
    fn(); torch.cuda.synchronize()
    ts = []
    for _ in range(n):
        a = torch.cuda.Event(enable_timing=True); b = torch.cuda.Event(enable_timing=True)
        a.record(); fn(); b.record(); torch.cuda.synchronize(); ts.append(a.elapsed_time(b))
    return statistics.median(ts)
print(torch.cuda.get_device_name(), torch.__version__)
for (m, k, n) in [(4096, 2048, 4096), (4096, 4096, 4096), (4096, 4096, 1024), (8192, 4096, 4096), (16384, 1024, 4096), (8192, 3000, 3000), (8192, 1024, 3072)]:
    a = torch.randn(m, k, device="cuda"); w = torch.randn(n, k, device="cuda")
    torch.backends.cuda.matmul.allow_tf32 = False
    s = t(lambda: a @ w.t())
    torch.backends.cuda.matmul.allow_tf32 = True
    f = t(lambda: a @ w.t())
    torch.backends.cuda.matmul.allow_tf32 = False
    fl = 2 * m * n * k
    print(f"gemm {m}x{k}x{n} A@W^T: fp32 {s:.3f} ms {fl/s/1e9:.1f} TF/s; tf32 {f:.3f} ms {fl/f/1e9:.1f} TF/s")
def load(p):
    spec = importlib.util.spec_from_file_location("m", p); m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m); return m
from torch.profiler import profile, ProfilerActivity
for name in ["tasks/level3/02_resnet_basic_block.py", "tasks/level3/05_small_cnn.py", "tasks/level2/02_conv2d_relu_biasadd.py", "tasks/level2/04_conv2d_groupnorm_tanh_hardswish_residual.py"]:
    mod = load(name)
    model = mod.Model(*mod.get_init_inputs()).cuda()
    xs = [x.cuda() for x in mod.get_inputs()]
    with torch.no_grad():
        e = t(lambda: model(*xs), 10)
        c = torch.compile(model)
        c(*xs)
        ct = t(lambda: c(*xs), 10)
        print(f"{name}: eager {e:.3f} ms compile {ct:.3f} ms")
        for tag, fn in [("eager", lambda: model(*xs)), ("compile", lambda: c(*xs))]:
            with profile(activities=[ProfilerActivity.CUDA]) as p:
                for _ in range(3): fn()
                torch.cuda.synchronize()
            print(f"--- {name} {tag}")
            print(p.key_averages().table(sort_by="cuda_time_total", row_limit=12, max_name_column_width=90))
