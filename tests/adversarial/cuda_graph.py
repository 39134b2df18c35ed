# Honest: Swish for tasks/level1/03_swish.py replayed from a CUDA graph (the
# two kernels, sigmoid and product, launched as one graph). Each call copies
# the input into the graph's static input, replays, and returns a copy of the
# static output, so every call computes on its own inputs and no output is
# shared with a later call. The graph is captured again when the shape
# changes. On the CPU it is plain eager code.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self._key = None

    def _body(self):
        torch.mul(self.s_in, torch.sigmoid(self.s_in), out=self.s_out)

    def _capture(self, x):
        self.s_in = torch.empty_like(x)
        self.s_in.copy_(x)
        self.s_out = torch.empty_like(x)
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):  # warm-up outside the capture
            for _ in range(2):
                self._body()
        torch.cuda.current_stream().wait_stream(side)
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph):
            self._body()
        self._key = (tuple(x.shape), x.dtype, x.device)

    def forward(self, x):
        if not x.is_cuda:
            return x * torch.sigmoid(x)
        if self._key != (tuple(x.shape), x.dtype, x.device):
            self._capture(x)
        self.s_in.copy_(x)
        self.graph.replay()
        return self.s_out.clone()
