import torch
import torch.nn as nn


class Model(nn.Module):
    """nn.MSELoss as a module: one aten::mse_loss op with reduction mean."""

    def __init__(self):
        super().__init__()
        self.loss = nn.MSELoss()

    def forward(self, predictions: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        return self.loss(predictions, targets)


def get_inputs():
    return [torch.randn(16, 20, 30), torch.randn(16, 20, 30)]


def get_init_inputs():
    return []
