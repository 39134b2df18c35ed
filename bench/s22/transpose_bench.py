# NCHW <-> NHWC conversion rates on the GPU: kopt's transpose kernel at knob
# settings, against PyTorch's strided copy and a plain copy (the device's
# copy rate: one read and one write).
#   PYTHONPATH=python KOPT_BIN=.devbin/kopt python bench/s22/transpose_bench.py
import itertools, re
import torch, kopt
from cudatime import median_ms

src0 = open("kernels/layout/transpose_last2.cu").read()


t = lambda fn, n=50: median_ms(fn, n)


def mod(**knobs):
    s = src0
    for k, v in knobs.items():
        s = re.sub(r"(?m)^constexpr int %s = \d+;" % k, "constexpr int %s = %d;" % (k, v), s)
    return kopt.load_cuda(s, name="kopt_transpose")


print(torch.cuda.get_device_name())
for (n, c, h, w) in [(32, 64, 112, 112), (256, 32, 64, 64), (32, 256, 28, 28)]:
    x = torch.randn(n, c, h, w, device="cuda")
    y = torch.empty_like(x, memory_format=torch.channels_last)
    gb = 2 * x.numel() * 4 / 1e9
    base = t(lambda: x.clone())
    tc = t(lambda: x.contiguous(memory_format=torch.channels_last))
    print(f"[{n},{c},{h},{w}] copy {base*1e3:.1f} us ({gb/base:.2f} TB/s); torch to NHWC {tc*1e3:.1f} us")
    xv, yv = x.view(n, c, h * w), y.permute(0, 2, 3, 1).view(n, h * w, c)
    z = torch.empty_like(x)
    for knobs in [dict(VEC=1, TILE=32, ROWS=8), dict(VEC=1, TILE=64, ROWS=8), dict(VEC=1, TILE=64, ROWS=4)] + \
            [dict(VEC=4, TILE=a, TB=b, ROWS=r) for (a, b), r in itertools.product(((32, 64), (32, 128), (64, 64), (64, 128)), (4, 8))]:
        m = mod(**knobs)
        f = t(lambda: m([xv], [yv]))
        b = t(lambda: m([yv], [z.view(n, c, h * w)]))
        ok = torch.equal(y, x.contiguous(memory_format=torch.channels_last)) and torch.equal(z, x)
        print(f"  {knobs}: to NHWC {f*1e3:.1f} us ({gb/f:.2f} TB/s), back {b*1e3:.1f} us ({gb/b:.2f} TB/s){'' if ok else ' WRONG'}")
