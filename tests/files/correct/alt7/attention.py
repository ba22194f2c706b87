"""Correct, written differently: each function as written by someone who had only the contract
(the source file is named above each one)."""
import math
import torch
from torch import nn
import torch.nn.functional as F


# scaled_dot_product_attention: from c06_inf_nan_to_num.py: CORRECT: -inf fill, softmax, then nan_to_num on weights (fully masked rows -> 0), out = weights @ V
def scaled_dot_product_attention(Q, K, V, mask=None):
    scores = Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    w = torch.nan_to_num(torch.softmax(scores, -1), nan=0.0)
    return w @ V, w


# MultiHeadAttention: from c23_mha_torch_mha_forward.py: CORRECT: MHA via F.multi_head_attention_forward with W_q/W_k/W_v/W_o weights, average_attn_weights=False;
class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, bias=True):
        super().__init__()
        if d_model % num_heads != 0:
            raise ValueError("d_model not divisible by num_heads")
        self.d_model, self.num_heads, self.dh = d_model, num_heads, d_model // num_heads
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, d_model, bias=bias)
        self.W_v = nn.Linear(d_model, d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, x_q, x_kv, mask=None):
        B, Tq, D = x_q.shape
        Tk = x_kv.shape[1]
        H = self.num_heads
        attn_mask = None
        if mask is not None:
            m = mask
            while m.dim() < 4:
                m = m.unsqueeze(0)
            m = m.expand(B, H, Tq, Tk)
            # make fully-blocked rows attend to everything; zero them afterwards
            empty = ~m.any(-1, keepdim=True)
            attn_mask = ~(m | empty)
            attn_mask = attn_mask.reshape(B * H, Tq, Tk)
        b = self.W_q.bias
        in_b = None if b is None else torch.cat([self.W_q.bias, self.W_k.bias, self.W_v.bias])
        out, w = F.multi_head_attention_forward(
            x_q.transpose(0, 1), x_kv.transpose(0, 1), x_kv.transpose(0, 1), D, H,
            None, in_b, None, None, False, 0.0, self.W_o.weight, self.W_o.bias,
            training=False, need_weights=True, attn_mask=attn_mask,
            use_separate_proj_weight=True, q_proj_weight=self.W_q.weight,
            k_proj_weight=self.W_k.weight, v_proj_weight=self.W_v.weight,
            average_attn_weights=False)
        out = out.transpose(0, 1)
        if mask is not None:
            w = w.masked_fill(~m, 0.0)
        return out, w
