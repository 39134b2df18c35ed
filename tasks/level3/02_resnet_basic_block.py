import torch
import torch.nn as nn


class Model(nn.Module):
    """ResNet basic block (conv3x3-BN-ReLU-conv3x3-BN + identity, ReLU).
    BatchNorm layers are in training mode (batch statistics), the default."""

    def __init__(self, planes: int):
        super().__init__()
        self.conv1 = nn.Conv2d(planes, planes, kernel_size=3, stride=1, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(planes, planes, kernel_size=3, stride=1, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        identity = x
        out = self.conv1(x)
        out = self.bn1(out)
        out = self.relu(out)
        out = self.conv2(out)
        out = self.bn2(out)
        out = out + identity
        return self.relu(out)


batch_size = 32
planes = 64
height = 112
width = 112


def get_inputs():
    x = torch.randn(batch_size, planes, height, width)
    return [x]


def get_init_inputs():
    return [planes]
