import torch
import torch.nn as nn


class Model(nn.Module):
    """Softmax with a temperature over dim 1 of a 3-D (batch, classes, length)
    tensor: the reduced dim is strided (stride = length), not the last one."""

    def __init__(self, temperature: float):
        super().__init__()
        self.temperature = temperature

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x / self.temperature, dim=1)


batch_size = 16
classes = 1000
length = 4096
temperature = 0.5


def get_inputs():
    x = torch.randn(batch_size, classes, length)
    return [x]


def get_init_inputs():
    return [temperature]
