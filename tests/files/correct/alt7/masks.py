"""Correct, written differently: each function as written by someone who had only the contract
(the source file is named above each one)."""
import torch
from torch import nn
import math
import torch.nn.functional as F


# padding_mask: from m_cumsum_scatter.py: CORRECT [masks]: padding via scatter+cumsum; causal via tril of float ones -> bool; attention via torch.where
def padding_mask(lengths, max_len=None):
    lengths = lengths.long()
    if bool((lengths < 0).any()):
        raise ValueError("negative length")
    T = int(lengths.max()) if max_len is None else int(max_len)
    if bool((lengths > T).any()):
        raise ValueError("length > T")
    B = lengths.shape[0]
    z = torch.zeros(B, T + 1, device=lengths.device)
    z.scatter_(1, lengths[:, None], 1.0)
    return (z.cumsum(1)[:, :T] == 0)


# causal_mask: from m_cumsum_scatter.py: CORRECT [masks]: padding via scatter+cumsum; causal via tril of float ones -> bool; attention via torch.where
def causal_mask(T, device=None):
    return torch.tril(torch.ones(T, T, device=device)).bool()


# attention_mask: from m_cumsum_scatter.py: CORRECT [masks]: padding via scatter+cumsum; causal via tril of float ones -> bool; attention via torch.where
def attention_mask(lengths, max_len=None, causal=False):
    keys = padding_mask(lengths, max_len)
    B, T = keys.shape
    allowed = keys[:, None, None, :].expand(B, 1, T, T)
    if causal:
        c = causal_mask(T, device=lengths.device)
        allowed = torch.where(c, allowed, torch.zeros_like(allowed))
    return allowed.contiguous()
