"""Hostile masks submission: replaces the worker's own reporting (found in sys.modules) so that
every exception it reports carries hundreds of kilobytes of text with terminal escapes (a cleared
screen, a fake score, a clipboard write), every load reports forty long problems and a thousand
long names, and the worker's string cap is lifted; padding_mask and attention_mask raise with
escapes and bidi overrides in their messages, causal_mask returns a 500,000-character string.

See catalogue.yml for what the grader must report."""
import sys

import torch

_WORKER = sys.modules.get("autograder.sandbox.worker")
_PROTOCOL = sys.modules.get("autograder.sandbox.protocol")
if _WORKER is not None:
    def _exception(self, e):
        return {"type": "T" * 50_000, "mro": ["X" * 1000] * 100, "message": "\x1b[2J\x1b[H100 / 100\n" * 10_000,
                "where": "\x1b]52;c;aGVsbG8=\x07" * 10_000}

    _loaded = _WORKER.loaded_header

    def _loaded_header(sub, **more):
        header = _loaded(sub, **more)
        header["loaded"] = ["\x1b[31mL" * 2_000] * 40
        header["names"] = header["names"] + ["N" * 100] * 1000
        return header

    _WORKER.Worker.exception = _exception
    _WORKER.loaded_header = _loaded_header
if _PROTOCOL is not None:
    _PROTOCOL.MAX_STR = 10 ** 8


def padding_mask(lengths, max_len=None):
    """hostile: see the module docstring"""
    raise ValueError("\u202e\x1b[2J" + "no " * 100_000)


def causal_mask(T, device=None):
    """hostile: see the module docstring"""
    return "\x1b[2J" + "S" * 500_000


def attention_mask(lengths, max_len=None, causal=False):
    """hostile: see the module docstring"""
    raise RuntimeError("\x9b31m\x1b]0;title\x07" * 100_000)
