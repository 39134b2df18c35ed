import torch
import torch.nn as nn


class Model(nn.Module):
    """A small CNN: conv -> BatchNorm (training) -> ReLU -> max pool, conv ->
    ReLU6 -> max pool, flatten, linear -> ReLU -> linear. For the library
    replay's channels-last convolutions, pool-first activations and GEMM
    epilogues."""

    def __init__(self, classes: int):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 16, 3, padding=1, bias=False)
        self.fc = nn.Sequential(
            nn.Linear(16 * (height // 4) * (width // 4), 24), nn.ReLU(), nn.Linear(24, classes)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.max_pool2d(torch.relu(self.bn(self.conv1(x))), 2)
        x = torch.max_pool2d(nn.functional.relu6(self.conv2(x)), 2)
        return self.fc(torch.flatten(x, 1))


batch_size = 4
height = 12
width = 16


def get_inputs():
    return [torch.randn(batch_size, 3, height, width)]


def get_init_inputs():
    return [10]
