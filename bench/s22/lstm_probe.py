# The LSTM task on the GPU: what its capture phases cost (eager, the float64
# reference, torch.compile's first call) and what a CUDA graph of the
# reference's own forward gives (the planner's cuda-graph option, never
# measured in a suite run: 0 candidates measured there).
#   python bench/s22/lstm_probe.py
import runpy, time
import torch
from cudatime import median_ms


t = lambda fn, n=20: median_ms(fn, n)


m = runpy.run_path("tasks/level3/04_lstm.py")
torch.manual_seed(0)
model = m["Model"](*m["get_init_inputs"]()).cuda()
x = m["get_inputs"]()[0].cuda()
print(torch.cuda.get_device_name(), torch.__version__)
with torch.no_grad():
    s = time.time(); e = t(lambda: model(x)); print(f"eager {e:.3f} ms ({time.time() - s:.1f} s)")
    # The reference's forward captured in one CUDA graph (static input).
    xs = x.clone()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            model(xs)
    torch.cuda.current_stream().wait_stream(side)
    g = torch.cuda.CUDAGraph()
    try:
        with torch.cuda.graph(g):
            ys = model(xs)
        g.replay(); torch.cuda.synchronize()
        ok = torch.allclose(ys, model(x), atol=1e-5)
        print(f"CUDA graph of the forward: {t(lambda: g.replay()):.3f} ms (eager {e:.3f}); same result: {ok}")
    except Exception as ex:
        print(f"CUDA graph capture failed: {type(ex).__name__}: {ex}")
    s = time.time()
    m64 = m["Model"](*m["get_init_inputs"]()).cuda().double()
    y64 = m64(x.double()); torch.cuda.synchronize()
    print(f"float64 forward on the GPU: {time.time() - s:.1f} s")
    s = time.time()
    comp = torch.compile(model)
    comp(x); torch.cuda.synchronize()
    print(f"torch.compile first call {time.time() - s:.1f} s; compiled {t(lambda: comp(x)):.3f} ms")
