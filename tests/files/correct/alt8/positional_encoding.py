"""Correct, written differently: each function as written by someone who had only the contract
(the source file is named above each one)."""
import torch
from torch import nn
import math
import numpy as np
import torch.nn.functional as F


# sinusoidal_encoding: from p_numpy.py: CORRECT [positional_encoding]: numpy implementation (float64) then torch.from_numpy(...).float()
def sinusoidal_encoding(T, d, base=10000.0):
    if d % 2:
        raise ValueError("d must be even")
    pos = np.arange(T)[:, None]
    i = np.arange(d // 2)[None, :]
    ang = pos / np.power(base, 2 * i / d)
    pe = np.zeros((T, d))
    pe[:, 0::2] = np.sin(ang)
    pe[:, 1::2] = np.cos(ang)
    return torch.from_numpy(pe).float()


# add_positional_encoding: from p_numpy.py: CORRECT [positional_encoding]: numpy implementation (float64) then torch.from_numpy(...).float()
def add_positional_encoding(X):
    B, T, d = X.shape
    return X + sinusoidal_encoding(T, d).to(X.dtype).to(X.device)
