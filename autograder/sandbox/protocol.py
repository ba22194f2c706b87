"""The only things that cross between the judge and a worker: framed messages of JSON plus
`.npy` arrays.  No pickle, no objects.

Frame: ``<u32 header length> <u32 number of arrays> header-JSON {<u64 length> npy-bytes}``.
The reader checks every length against a cap before it allocates, and every array's `.npy`
header against a dtype allow-list and the exact byte count, so a hostile worker can send
garbage but never make the judge allocate much, run code or build an object it did not ask for.

Values (``encode``/``decode``): tensors -> {"t": i, "rg": requires_grad}; numpy arrays ->
{"np": i}; None / bool / int / float / str as themselves (strings capped); tuples and lists ->
{"tuple": [...]}, {"list": [...]}; torch.device / dtype -> {"device": ...}, {"dtype": ...};
anything else -> {"obj": "<type name>"} (so the judge can say what came back).
"""
import io
import json
import os
import select
import struct
import time

import numpy as np

MAX_HEADER = 4 << 20  # bytes of JSON in one frame
MAX_ARRAY = 64 << 20  # bytes in one array
MAX_FRAME = 256 << 20  # bytes in one frame
MAX_ARRAYS = 4096
MAX_STR = 2000
ALLOWED_DTYPES = {np.dtype(t) for t in ("bool", "int8", "int16", "int32", "int64", "uint8",
                                        "float16", "float32", "float64")}


class ProtocolError(Exception):
    """The other side sent something that is not a well-formed, bounded message."""


class ChannelClosed(ProtocolError):
    """The other side closed the channel (it exited or was killed)."""


class ChannelTimeout(ProtocolError):
    pass


# ---------------------------------------------------------------- arrays

def array_to_npy(a):
    buf = io.BytesIO()
    np.save(buf, np.asarray(a, order="C"), allow_pickle=False)  # (ascontiguousarray makes 0-d 1-d)
    return buf.getvalue()


def npy_to_array(data):
    """Parse `.npy` bytes with every check done before anything is allocated."""
    buf = io.BytesIO(data)
    try:
        version = np.lib.format.read_magic(buf)
        if version == (1, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_1_0(buf, max_header_size=10000)
        elif version == (2, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_2_0(buf, max_header_size=10000)
        else:
            raise ProtocolError(f"unsupported npy version {version}")
    except ProtocolError:
        raise
    except Exception as e:  # noqa: BLE001 - a malformed header in any way
        raise ProtocolError(f"bad npy header: {e}") from None
    if dtype not in ALLOWED_DTYPES:
        raise ProtocolError(f"array dtype {dtype} is not allowed")
    if not all(isinstance(s, int) and 0 <= s for s in shape):
        raise ProtocolError(f"bad array shape {shape}")
    n = 1
    for s in shape:
        n *= s
    nbytes = n * dtype.itemsize
    if nbytes > MAX_ARRAY or nbytes != len(data) - buf.tell():
        raise ProtocolError(f"array of shape {shape} and {dtype} does not match its {len(data) - buf.tell()} bytes")
    a = np.frombuffer(data, dtype=dtype, count=n, offset=buf.tell())
    return a.reshape(shape, order="F" if fortran else "C").copy()


# ---------------------------------------------------------------- values

def encode(value, arrays, depth=0):
    import torch

    if depth > 20:
        return {"obj": "deeply nested value"}
    if isinstance(value, torch.Tensor):
        t = value.detach()
        if t.is_complex() or t.layout != torch.strided:
            return {"obj": f"Tensor({t.dtype}, {t.layout})"}
        if t.dtype == torch.bfloat16:
            t = t.float()
        arrays.append(array_to_npy(t.cpu().contiguous().numpy()))
        return {"t": len(arrays) - 1, "rg": bool(value.requires_grad)}
    if isinstance(value, np.ndarray):
        if value.dtype not in ALLOWED_DTYPES:
            return {"obj": f"ndarray({value.dtype})"}
        arrays.append(array_to_npy(value))
        return {"np": len(arrays) - 1}
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int):
        return value if abs(value) < 2**62 else {"obj": "int (huge)"}
    if isinstance(value, float):
        return {"float": repr(value)}
    if isinstance(value, str):
        return {"str": value[:MAX_STR]}
    if isinstance(value, tuple):
        return {"tuple": [encode(v, arrays, depth + 1) for v in value[:64]]}
    if isinstance(value, list):
        return {"list": [encode(v, arrays, depth + 1) for v in value[:64]]}
    if isinstance(value, torch.device):
        return {"device": str(value)}
    if isinstance(value, torch.dtype):
        return {"dtype": str(value).replace("torch.", "")}
    return {"obj": type(value).__name__[:100]}


class Opaque:
    """Stands in for an object the worker returned that is not data (a class instance, ...)."""

    def __init__(self, type_name):
        self.type_name = type_name

    def __repr__(self):
        return f"<{self.type_name}>"


def decode(value, arrays, depth=0, leaf_grads=False):
    """Rebuild plain values; tensors come back as new torch tensors.  With `leaf_grads` (worker
    side) a tensor the judge marked "rg" becomes a leaf that requires grad."""
    import torch

    if depth > 21:
        raise ProtocolError("value nested too deeply")
    if value is None or isinstance(value, (bool, int)):
        return value
    if not isinstance(value, dict) or len(value) > 2:
        raise ProtocolError(f"unexpected value {str(value)[:80]}")
    if "t" in value:
        t = torch.from_numpy(_array(arrays, value["t"]))
        return t.requires_grad_(True) if leaf_grads and value.get("rg") and t.is_floating_point() else t
    if "np" in value:
        return _array(arrays, value["np"])
    if "float" in value:
        return float(str(value["float"])[:40])
    if "str" in value:
        return str(value["str"])[:MAX_STR]
    if "tuple" in value:
        return tuple(decode(v, arrays, depth + 1, leaf_grads) for v in _seq(value["tuple"]))
    if "list" in value:
        return [decode(v, arrays, depth + 1, leaf_grads) for v in _seq(value["list"])]
    if "device" in value:
        return torch.device(str(value["device"])[:20])
    if "dtype" in value:
        dt = getattr(torch, str(value["dtype"])[:20], None)
        return dt if isinstance(dt, torch.dtype) else Opaque("dtype")
    if "obj" in value:
        return Opaque(str(value["obj"])[:100])
    raise ProtocolError(f"unexpected value {str(value)[:80]}")


def _seq(v):
    if not isinstance(v, list) or len(v) > 64:
        raise ProtocolError("bad sequence")
    return v


def _array(arrays, i):
    if not isinstance(i, int) or not 0 <= i < len(arrays):
        raise ProtocolError("array index out of range")
    return arrays[i]


def flat_tensors(value, out=None):
    """The tensors in a value (nested tuples and lists), in order: both sides agree on it."""
    import torch

    out = [] if out is None else out
    if isinstance(value, torch.Tensor):
        out.append(value)
    elif isinstance(value, (tuple, list)):
        for v in value:
            flat_tensors(v, out)
    return out


def same_values(a, b):
    """Equal shape, dtype and values, NaN equal to NaN (was an input modified in place?)."""
    import torch

    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.is_floating_point() or a.is_complex():
        return bool(((a == b) | (torch.isnan(a) & torch.isnan(b))).all())
    return bool(torch.equal(a, b))


# ---------------------------------------------------------------- framing

def send(sock, header, arrays=()):
    h = json.dumps(header, ensure_ascii=False, allow_nan=False).encode()
    parts = [struct.pack("<II", len(h), len(arrays)), h]
    for a in arrays:
        parts += [struct.pack("<Q", len(a)), a]
    sock.sendall(b"".join(parts))


def _recv_exact(sock, n, deadline):
    chunks, got = [], 0
    while got < n:
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([sock], [], [], left)[0]:
                raise ChannelTimeout("no answer in time")
        chunk = sock.recv(min(n - got, 1 << 20))
        if not chunk:
            raise ChannelClosed("the other side closed the channel")
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def recv(sock, deadline=None, decode_arrays=True):
    """(header, arrays) from one frame; raises ProtocolError for anything malformed or too big."""
    hlen, narr = struct.unpack("<II", _recv_exact(sock, 8, deadline))
    if hlen > MAX_HEADER or narr > MAX_ARRAYS:
        raise ProtocolError(f"frame too large ({hlen} bytes of header, {narr} arrays)")
    try:
        header = json.loads(_recv_exact(sock, hlen, deadline))
    except ValueError as e:
        raise ProtocolError(f"header is not JSON: {e}") from None
    arrays, total = [], hlen
    for _ in range(narr):
        (alen,) = struct.unpack("<Q", _recv_exact(sock, 8, deadline))
        total += alen
        if alen > MAX_ARRAY + 1024 or total > MAX_FRAME:
            raise ProtocolError("array too large")
        data = _recv_exact(sock, alen, deadline)
        arrays.append(npy_to_array(data) if decode_arrays else data)
    if not isinstance(header, dict):
        raise ProtocolError("header is not an object")
    return header, arrays


def close_other_fds(keep):
    """Close every file descriptor above 2 but `keep` (the worker must not reach the judge's pipes)."""
    keep = sorted(set(keep))
    lo = 3
    for fd in keep + [os.sysconf("SC_OPEN_MAX")]:
        if fd > lo:
            os.closerange(lo, fd)
        lo = max(lo, fd + 1)
