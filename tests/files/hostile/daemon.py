"""Hostile masks submission: double-forks a daemon (own session, ignores SIGTERM/SIGHUP) that
heartbeats for 60 s.

See catalogue.yml for what the grader must report."""
import os
import signal
import time

import torch


def _daemon():
    if os.fork() != 0:
        return
    try:
        os.setsid()
        if os.fork() != 0:
            os._exit(0)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
        end = time.monotonic() + 60
        while time.monotonic() < end:
            for path in ("heartbeat", "/tmp/seqgrader-hostile-heartbeat"):
                try:
                    with open(path, "w") as f:
                        f.write(f"{os.getpid()} {time.time()}\n")
                except OSError:
                    pass
            time.sleep(0.2)
    finally:
        os._exit(0)


_daemon()


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
    """mask[i, j] = (j <= i): query i sees keys 0..i, never the future."""
    return torch.ones(T, T, dtype=torch.bool, device=device).tril()  # (T, T)


def attention_mask(lengths, max_len=None, causal=False):
    """(B, 1, T, T): key j is real and, if causal, j <= i.  Calls neither function above, so a
    hostile causal_mask / padding_mask costs only its own tests."""
    T = int(lengths.max()) if max_len is None else int(max_len)
    keys = torch.arange(T, device=lengths.device)[None, :] < lengths[:, None]  # (B, T)
    mask = keys[:, None, None, :].expand(-1, 1, T, T)  # (B, 1, T, T)
    if causal:
        mask = mask & torch.ones(T, T, dtype=torch.bool, device=lengths.device).tril()
    return mask
