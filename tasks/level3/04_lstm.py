import torch
import torch.nn as nn


class Model(nn.Module):
    """Two-layer batch-first LSTM with zero initial state; returns the last
    layer's hidden state at every time step, (batch, seq_len, hidden)."""

    def __init__(self, input_size: int, hidden_size: int, num_layers: int):
        super().__init__()
        self.lstm = nn.LSTM(input_size, hidden_size, num_layers=num_layers,
                            batch_first=True, dropout=0.0)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out, _ = self.lstm(x)
        return out


batch_size = 64
seq_len = 256
input_size = 256
hidden_size = 512
num_layers = 2


def get_inputs():
    x = torch.randn(batch_size, seq_len, input_size)
    return [x]


def get_init_inputs():
    return [input_size, hidden_size, num_layers]
