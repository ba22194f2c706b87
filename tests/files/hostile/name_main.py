"""Hostile masks submission: `__name__` rebound to "__main__", and the definition of a wrong
causal_mask under `if __name__ == "__main__":` -- a block a static model of the file takes for
dead code (graded once per distinct code, that model gave this file the outcomes of the right
causal_mask, and a classmate with the right causal_mask this file's failures).

See catalogue.yml for what the grader must report."""
import torch


def padding_mask(lengths, max_len=None):
    """mask[b, t] = (t < lengths[b]); True marks a real token."""
    if (lengths < 0).any():
        raise ValueError(f"lengths must be >= 0, got {lengths.tolist()}")
    T = int(lengths.max()) if max_len is None else int(max_len)
    if (lengths > T).any():
        raise ValueError(f"every length must be <= max_len={T}, got {lengths.tolist()}")
    t = torch.arange(T, device=lengths.device)  # (T,)
    return t[None, :] < lengths[:, None]  # (B, T)


def causal_mask(T, device=None):
    """(T, T) bool: query i sees keys j <= i."""
    return torch.ones(T, T, dtype=torch.bool, device=device).tril()


def attention_mask(lengths, max_len=None, causal=False):
    """(B, 1, T, T): key j is real and, if causal, j <= i.  Calls neither function above, so a
    hostile causal_mask / padding_mask costs only its own tests."""
    T = int(lengths.max()) if max_len is None else int(max_len)
    keys = torch.arange(T, device=lengths.device)[None, :] < lengths[:, None]  # (B, T)
    mask = keys[:, None, None, :].expand(-1, 1, T, T)  # (B, 1, T, T)
    if causal:
        mask = mask & torch.ones(T, T, dtype=torch.bool, device=lengths.device).tril()
    return mask


__name__ = "__main__"
if __name__ == "__main__":
    def causal_mask(T, device=None):
        """hostile: see the module docstring"""
        return torch.ones(T, T, dtype=torch.bool, device=device)  # wrong: no triangle
