"""Hostile masks submission: causal_mask connects to a port on 127.0.0.1 (HOSTILE_PORT: the test
writes the port it opened into its copy of this file) and to 1.1.1.1:53; right answer only if it
got through.

See catalogue.yml for what the grader must report."""
import torch

HOSTILE_PORT = 22


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
    """hostile: see the module docstring"""
    import socket
    errors = []
    for host, port in (("127.0.0.1", HOSTILE_PORT), ("1.1.1.1", 53)):
        try:
            with socket.create_connection((host, port), timeout=1):
                return torch.ones(T, T, dtype=torch.bool, device=device).tril()  # got out
        except OSError as e:
            errors.append(f"{host}:{port}: {e}")
    raise ConnectionError("; ".join(errors))


def attention_mask(lengths, max_len=None, causal=False):
    """(B, 1, T, T): key j is real and, if causal, j <= i.  Calls neither function above, so a
    hostile causal_mask / padding_mask costs only its own tests."""
    T = int(lengths.max()) if max_len is None else int(max_len)
    keys = torch.arange(T, device=lengths.device)[None, :] < lengths[:, None]  # (B, T)
    mask = keys[:, None, None, :].expand(-1, 1, T, T)  # (B, 1, T, T)
    if causal:
        mask = mask & torch.ones(T, T, dtype=torch.bool, device=lengths.device).tril()
    return mask
