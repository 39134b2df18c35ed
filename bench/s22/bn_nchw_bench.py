# kopt's channels-last BatchNorm (training, + residual, ReLU) at the resnet
# block's shape: the apply writing NHWC and a separate NHWC -> NCHW
# conversion (kopt's transpose), against the apply writing NCHW itself
# (slot KOPT_OUT_NCHW). Both checked against PyTorch.
#   PYTHONPATH=python KOPT_BIN=.devbin/kopt python bench/s22/bn_nchw_bench.py
import re
import torch, kopt
from cudatime import median_ms


t = lambda fn, n=50: median_ms(fn, n)


def load(path, defines, name):
    s = open(path).read()
    for k, v in defines.items():
        s = re.sub(r"(?m)^#define %s -?\d+" % k, "#define %s %d" % (k, v), s)
    return kopt.load_cuda(s, name=name)


print(torch.cuda.get_device_name())
tr = load("kernels/layout/transpose_last2.cu", {}, "kopt_transpose")
for (n, c, h, w) in [(32, 64, 112, 112), (32, 256, 28, 28)]:
    torch.manual_seed(0)
    x = torch.randn(n, c, h, w, device="cuda").contiguous(memory_format=torch.channels_last)
    r = torch.randn(n, c, h, w, device="cuda").contiguous(memory_format=torch.channels_last)
    wt, bs = torch.randn(c, device="cuda"), torch.randn(c, device="cuda")
    rm, rv = torch.zeros(c, device="cuda"), torch.ones(c, device="cuda")
    ref = torch.relu(torch.nn.functional.batch_norm(x, rm.clone(), rv.clone(), wt, bs, True, 0.1, 1e-5) + r)
    slots = dict(KOPT_AFFINE=1, KOPT_RUNNING=1, KOPT_TRACKED=0, KOPT_RESIDUAL=1, KOPT_ACT=1)
    cl = load("kernels/norm/batch_norm_cl.cu", dict(slots, KOPT_OUT_NCHW=0), "kopt_batch_norm")
    nc = load("kernels/norm/batch_norm_cl.cu", dict(slots, KOPT_OUT_NCHW=1), "kopt_batch_norm")
    y = torch.empty_like(x); z = torch.empty(n, c, h, w, device="cuda"); z2 = torch.empty_like(z)
    ins = lambda: [x.permute(0, 2, 3, 1), wt, bs, rm, rv, r.permute(0, 2, 3, 1)]

    def two():
        cl(ins(), [y.permute(0, 2, 3, 1)])
        tr([y.permute(0, 2, 3, 1).reshape(n, h * w, c)], [z.view(n, c, h * w)])

    def one():
        nc(ins(), [z2])

    a, b, o = t(two), t(lambda: cl(ins(), [y.permute(0, 2, 3, 1)])), t(one)
    e1, e2 = (z - ref).abs().max().item(), (z2 - ref).abs().max().item()
    eager = t(lambda: torch.relu(torch.nn.functional.batch_norm(x, rm, rv, wt, bs, True, 0.1, 1e-5) + r).contiguous())
    print(f"[{n},{c},{h},{w}] BN+res+ReLU NHWC then transpose {a*1e3:.1f} us (BN alone {b*1e3:.1f}); "
          f"BN writing NCHW {o*1e3:.1f} us; PyTorch (to NCHW) {eager*1e3:.1f} us; max err {e1:.1e} / {e2:.1e}")
