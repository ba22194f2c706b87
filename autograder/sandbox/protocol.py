"""The one message format between the grader's processes (a judge and its worker, a judge and
its zygote, a grading process and the sandbox server: see server.py): framed messages of JSON
plus raw array bytes.  No pickle, no objects.  A frame may carry file descriptors with its first
bytes (`send(..., fds=)`, `Channel.recv_fds`); on a datagram socket a frame is one datagram
(`parse`).

Frame: ``MAGIC <u32 header length> <u32 number of arrays> <u64 body length>``, then the header
JSON ``[message, [[dtype, shape], ...]]``, then the body: each array's raw C-order bytes, in
order, each padded to a multiple of 8 bytes.  The reader checks the fixed prefix against the caps
before it reads anything else, then every array's dtype against an allow-list (by name: no dtype
string is ever parsed), its shape (a short list of small non-negative ints), its byte count
against MAX_ARRAY and the sum of them against the announced body length, and only then allocates
the body (one buffer: the arrays are views of it).  So a hostile worker can send garbage but never
make the judge allocate much, run code or build an object it did not ask for.

Values (``encode``/``decode``): tensors -> {"t": i, "rg": requires_grad} (bfloat16 ones, which numpy
lacks, as float32 arrays marked {"bf": i, "rg": ...}, exact both ways; a tensor on the `meta`
device, which holds no data, as {"meta": [dtype name, shape], "rg": ...}, rebuilt on meta); numpy arrays ->
{"np": i}; None / bool / int / float / str as themselves (strings capped); tuples and lists ->
{"tuple": [...]}, {"list": [...]}; dicts with str keys -> {"dict": [[key, value], ...]} (other
dicts are "obj"); torch.device / dtype -> {"device": ...}, {"dtype": ...}; a tensor that is not on
the CPU (a GPU, the simulated device of elsewhere.py) or that the judge marked for the other device
also carries "dev": where it was ("cuda:0", "meta") or "elsewhere" (put it there), and elsewhere's
ELSEWHERE travels as {"device": "elsewhere"};
anything else -> {"obj": "<type name>"} (so the judge can say what came back).  ``i`` indexes the
frame's arrays: `encode` appends C-contiguous numpy arrays of an allowed dtype to its list,
`recv` returns the checked arrays in the same order.
"""

import json
import os
import re
import select
import socket
import struct
import time
from socket import MSG_WAITALL

import numpy as np

# what one frame may hold: far more than any property exchanges (the reference's largest frame
# over the whole course is 0.5 MiB of arrays), and little enough that a judge stays within its
# memory whatever a worker sends (runner.JUDGE_MEMORY_MB)
MAX_HEADER = 1 << 20  # bytes of JSON in one frame
MAX_ARRAY = 16 << 20  # bytes in one array
MAX_FRAME = 32 << 20  # bytes of arrays in one frame
MAX_ARRAYS = 4096
MAX_NDIM = 32
MAX_STR = 2000
MAGIC = b"SQG2"
PREFIX = struct.Struct("<4sIIQ")  # magic, header bytes, number of arrays, body bytes
DTYPES = {
    name: np.dtype(name)
    for name in ("bool", "int8", "int16", "int32", "int64", "uint8", "float16", "float32", "float64")
}
ALLOWED_DTYPES = set(DTYPES.values())
META_DTYPES = set(DTYPES) | {"bfloat16"}  # a meta tensor crosses as its dtype's name and shape only
_NAME = {dt: name for name, dt in DTYPES.items()}  # np.dtype -> its name on the wire
DEVICE = re.compile(r"[a-z]{1,12}(:[0-9]{1,3})?\Z")  # a tensor's "dev": "cuda:0", "meta", "elsewhere"
_json_encode = json.JSONEncoder(allow_nan=False, separators=(",", ":")).encode  # ASCII: any file name
_json_decode = json.JSONDecoder().decode


class ProtocolError(Exception):
    """The other side sent something that is not a well-formed, bounded message."""


class ChannelClosed(ProtocolError):
    """The other side closed the channel (it exited or was killed)."""


class ChannelTimeout(ProtocolError):
    pass


# ---------------------------------------------------------------- arrays


def _pad(n):
    return (n + 7) & ~7


def describe_arrays(descs):
    """Check the arrays' descriptions ``[[dtype name, shape], ...]`` of a frame before anything is
    allocated; return ``[(np.dtype, shape tuple, count, nbytes)]`` and the body length they need."""
    if not isinstance(descs, list):
        raise ProtocolError("array descriptions are not a list")
    out, total = [], 0
    for d in descs:
        if not isinstance(d, list) or len(d) != 2:
            raise ProtocolError("bad array description")
        name, shape = d
        dtype = DTYPES.get(name) if isinstance(name, str) else None
        if dtype is None:
            raise ProtocolError(f"array dtype {str(name)[:40]} is not allowed")
        if not isinstance(shape, list) or len(shape) > MAX_NDIM:
            raise ProtocolError(f"bad array shape {str(shape)[:80]}")
        n = 1
        for s in shape:
            if type(s) is not int or not 0 <= s <= MAX_ARRAY:
                raise ProtocolError(f"bad array shape {str(shape)[:80]}")
            n *= s
        nbytes = n * dtype.itemsize
        if nbytes > MAX_ARRAY:
            raise ProtocolError(f"array of shape {str(shape)[:80]} and {name} is too large")
        total += _pad(nbytes)
        if total > MAX_FRAME:
            raise ProtocolError("arrays too large")
        out.append((dtype, tuple(shape), n, nbytes))
    return out, total


def arrays_from_body(specs, body):
    """Views of the (already checked) body, one per array; each array is writable and aligned."""
    arrays, off = [], 0
    for dtype, shape, n, nbytes in specs:
        if n == 0:
            a = np.empty(shape, dtype=dtype)
        else:
            a = np.frombuffer(body, dtype=dtype, count=n, offset=off).reshape(shape)
        arrays.append(a)
        off += _pad(nbytes)
    return arrays


# ---------------------------------------------------------------- values


def encode(value, arrays, depth=0):
    """`value` as a frame's JSON data, its tensors and arrays appended to `arrays` (named by index);
    what cannot travel becomes {"obj": a description}, long strings and sequences are cut short."""
    import torch

    if depth > 20:
        return {"obj": "deeply nested value"}
    if isinstance(value, np.generic) and not isinstance(value, np.ndarray):
        if value.dtype in ALLOWED_DTYPES:  # a numpy scalar (np.mean's float64): its Python value
            value = value.item()
        else:
            return {"obj": f"numpy {value.dtype}"}
    if isinstance(value, torch.Tensor):
        from ..checks.elsewhere import ELSEWHERE, MARK, to_cpu

        value, device = to_cpu(value)  # a tensor on a GPU or on the simulated device: its values, and where
        if device is None and getattr(value, MARK, None) == ELSEWHERE.name:  # the judge's input mark, and only
            device = ELSEWHERE.name  # that: where a result is comes from the tensor itself, never from an attribute
        t = value.detach()
        if t.is_meta:  # no data to send (device="meta"): its dtype and shape, rebuilt on meta
            name = str(t.dtype).replace("torch.", "")
            if name not in META_DTYPES or t.dim() > MAX_NDIM:
                return {"obj": f"Tensor({t.dtype}, meta)"}
            return {"meta": [name, list(t.shape)], "rg": bool(value.requires_grad)}
        if t.is_complex() or t.layout != torch.strided:
            return {"obj": f"Tensor({t.dtype}, {t.layout})"}
        bf16 = t.dtype == torch.bfloat16  # numpy has no bfloat16: sent as float32 (exact), marked "bf"
        if bf16:
            t = t.float()
        a = t.cpu().resolve_conj().resolve_neg().contiguous().numpy()
        if a.dtype not in ALLOWED_DTYPES:
            return {"obj": f"Tensor({t.dtype})"}
        arrays.append(a)
        out = {"bf" if bf16 else "t": len(arrays) - 1, "rg": bool(value.requires_grad)}
        if isinstance(device, str) and DEVICE.match(device):
            out["dev"] = device
        return out
    if isinstance(value, np.ndarray):
        if value.dtype not in ALLOWED_DTYPES:
            return {"obj": f"ndarray({value.dtype})"}
        arrays.append(np.asarray(value, order="C"))  # (ascontiguousarray makes 0-d 1-d)
        return {"np": len(arrays) - 1}
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int):
        return value if abs(value) < 2**62 else {"obj": "int (huge)"}
    if isinstance(value, float):
        return {"float": repr(float(value))}
    if isinstance(value, str):
        return {"str": value[:MAX_STR]}
    if isinstance(value, tuple):
        return {"tuple": [encode(v, arrays, depth + 1) for v in value[:64]]}
    if isinstance(value, list):
        return {"list": [encode(v, arrays, depth + 1) for v in value[:64]]}
    if type(value) is dict:  # plain dicts with str keys (a configuration, a results record)
        if not all(type(k) is str for k in value):
            return {"obj": "dict (keys not all str)"}
        return {"dict": [[k[:MAX_STR], encode(v, arrays, depth + 1)] for k, v in list(value.items())[:64]]}
    if isinstance(value, torch.device):
        return {"device": str(value)}
    if getattr(value, "name", None) == "elsewhere" and type(value).__name__ == "_Elsewhere":
        return {"device": "elsewhere"}
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
    if not isinstance(value, dict) or len(value) > (3 if "dev" in value else 2):
        raise ProtocolError(f"unexpected value {str(value)[:80]}")
    if "t" in value or "bf" in value:
        t = torch.from_numpy(_array(arrays, value["t"] if "t" in value else value["bf"]))
        if "bf" in value:
            if t.dtype != torch.float32:
                raise ProtocolError("a bfloat16 tensor must travel as float32")
            t = t.to(torch.bfloat16)
        if "dev" in value:  # where the other side had it (checks/elsewhere.py): remembered, never used
            if not isinstance(value["dev"], str) or not DEVICE.match(value["dev"]):
                raise ProtocolError(f"bad device {str(value['dev'])[:40]}")
            from ..checks.elsewhere import mark

            return mark(t, value["dev"])
        return t.requires_grad_(True) if leaf_grads and value.get("rg") and t.is_floating_point() else t
    if "dev" in value:
        raise ProtocolError("a device without a tensor")
    if "meta" in value:
        return _meta(value["meta"])
    if "np" in value:
        return _array(arrays, value["np"])
    if "float" in value:
        try:
            return float(str(value["float"])[:40])
        except ValueError:
            raise ProtocolError("bad float") from None
    if "str" in value:
        return str(value["str"])[:MAX_STR]
    if "tuple" in value:
        return tuple(decode(v, arrays, depth + 1, leaf_grads) for v in _seq(value["tuple"]))
    if "list" in value:
        return [decode(v, arrays, depth + 1, leaf_grads) for v in _seq(value["list"])]
    if "dict" in value:
        out = {}
        for item in _seq(value["dict"]):
            if not isinstance(item, list) or len(item) != 2 or not isinstance(item[0], str):
                raise ProtocolError("bad dict item")
            out[item[0][:MAX_STR]] = decode(item[1], arrays, depth + 1, leaf_grads)
        return out
    if "device" in value:
        if value["device"] == "elsewhere":
            from ..checks.elsewhere import ELSEWHERE

            return ELSEWHERE
        try:
            return torch.device(str(value["device"])[:20])
        except (RuntimeError, ValueError):
            return Opaque("device")
    if "dtype" in value:
        dt = getattr(torch, str(value["dtype"])[:20], None)
        return dt if isinstance(dt, torch.dtype) else Opaque("dtype")
    if "obj" in value:
        return Opaque(str(value["obj"])[:100])
    raise ProtocolError(f"unexpected value {str(value)[:80]}")


def _meta(desc):
    """A tensor on the meta device (no data: nothing is allocated) from [dtype name, shape]."""
    import torch

    if not isinstance(desc, list) or len(desc) != 2 or desc[0] not in META_DTYPES:
        raise ProtocolError("bad meta tensor")
    shape = desc[1]
    if (
        not isinstance(shape, list)
        or len(shape) > MAX_NDIM
        or not all(type(s) is int and 0 <= s <= MAX_ARRAY for s in shape)
    ):
        raise ProtocolError(f"bad meta tensor shape {str(shape)[:80]}")
    return torch.empty(shape, dtype=getattr(torch, desc[0]), device="meta")


def _seq(v):
    if not isinstance(v, list) or len(v) > 64:
        raise ProtocolError("bad sequence")
    return v


def _array(arrays, i):
    if not isinstance(i, int) or not 0 <= i < len(arrays):
        raise ProtocolError("array index out of range")
    return arrays[i]


def flat_tensors(value, out=None):
    """The tensors in a value (nested tuples, lists and dict values), in order: both sides agree on it."""
    import torch

    out = [] if out is None else out
    if isinstance(value, torch.Tensor):
        out.append(value)
    elif isinstance(value, (tuple, list)):
        for v in value:
            flat_tensors(v, out)
    elif type(value) is dict:
        for v in value.values():
            flat_tensors(v, out)
    return out


def container_snapshot(values):
    """A comparable picture of the lists and dicts among `values` (an argument list), or None when
    there are none: taken before and after a call, it tells whether the call changed a list or a
    dict it was given (e.g. `base[key] = value` on a configuration).  Tensors count by identity
    (their values are compared separately), everything else by type and repr."""
    import torch

    def has(v, d=0):
        if type(v) in (list, dict):
            return True
        return isinstance(v, tuple) and d < 20 and any(has(x, d + 1) for x in v)

    if not any(has(v) for v in values):
        return None

    def snap(v, d=0):
        if d > 20:
            return "..."
        if isinstance(v, (torch.Tensor, np.ndarray)):
            return ("array", id(v))
        if isinstance(v, (list, tuple)):
            return (type(v).__name__, tuple(snap(x, d + 1) for x in v))
        if isinstance(v, dict):
            return ("dict", tuple((repr(k), snap(x, d + 1)) for k, x in list(v.items())))
        try:
            return ("value", type(v).__name__, repr(v)[:200])
        except BaseException:  # noqa: BLE001 - whatever the student put there
            return ("value", type(v).__name__)

    return tuple(snap(v) for v in values)


def same_values(a, b):
    """Equal shape, dtype and values, NaN equal to NaN (was an input modified in place?)."""
    import torch

    from ..checks.elsewhere import to_cpu

    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    (a, _), (b, _) = to_cpu(a), to_cpu(b)  # the values of a tensor on the simulated device (elsewhere.py)
    if a.is_meta or b.is_meta:  # no values to compare
        return a.is_meta and b.is_meta
    if torch.equal(a, b):  # the common case, in one kernel
        return True
    if a.is_floating_point() or a.is_complex():
        return bool(((a == b) | (torch.isnan(a) & torch.isnan(b))).all())
    return False


# ---------------------------------------------------------------- framing


def pack(header, arrays=()):
    """One frame's bytes: `header` (a JSON-able dict) and `arrays` (numpy arrays of an allowed
    dtype, as `encode` appends them)."""
    descs, body = [], []
    for a in arrays:
        a = np.asarray(a, order="C")
        name = _NAME.get(a.dtype)
        if name is None:
            raise ProtocolError(f"array dtype {a.dtype} is not allowed")
        descs.append([name, list(a.shape)])
        n = a.nbytes
        if n:
            body.append(a.reshape(-1).view(np.uint8).data)
            if n & 7:
                body.append(_ZEROS[: 8 - (n & 7)])
    h = _json_encode([header, descs]).encode()
    blen = sum(len(b) for b in body)
    return b"".join([PREFIX.pack(MAGIC, len(h), len(descs), blen), h, *body])


def send(sock, header, arrays=(), fds=()):
    """One frame, written whole; `fds` (file descriptors) travel with its first bytes."""
    data = pack(header, arrays)
    if fds:
        sent = socket.send_fds(sock, [data], list(fds))
        data = memoryview(data)[sent:]
        if not data:
            return  # (an empty write would be a datagram of its own on a SOCK_SEQPACKET socket)
    sock.sendall(data)


def parse(data):
    """(header, arrays) of a frame received whole (a datagram): see Channel.recv."""
    channel = Channel(None)
    channel.pending = bytes(data)
    header, arrays = channel.recv()
    if channel.pending:
        raise ProtocolError("bytes after the frame")
    return header, arrays


_ZEROS = bytes(8)


def _wait(sock, deadline):
    left = deadline - time.monotonic()
    if left <= 0 or not select.select([sock], [], [], left)[0]:
        raise ChannelTimeout("no answer in time")


def _recv_into(sock, view, deadline):
    """Fill `view` exactly from the socket (never reads past it)."""
    while len(view):
        if deadline is not None:
            _wait(sock, deadline)
        got = sock.recv_into(view, min(len(view), 1 << 20), MSG_WAITALL if deadline is None else 0)
        if not got:
            raise ChannelClosed("the other side closed the channel")
        view = view[got:]


class Channel:
    """One end of a judge/worker socket: `send` and `recv` frames.

    Reads are buffered: one recv of up to CHUNK bytes usually brings a whole frame (prefix,
    header and arrays), where reading each part exactly costs three system calls.  Bytes past the
    frame stay in the buffer for the next `recv`, exactly as they would have stayed in the socket,
    so a peer that writes garbage or extra frames gets the same ProtocolError as before.  A body
    larger than what the buffer holds is read straight into its own buffer, exactly."""

    CHUNK = 1 << 16

    def __init__(self, sock, buffered=True):
        self.sock = sock  # None: a frame received whole (parse), nothing more to read
        self.pending = b""  # received, not parsed yet
        self.chunk = self.CHUNK if buffered else 0
        self.maxfds, self.fds = 0, []  # file descriptors expected with the next bytes, and received

    def fileno(self):
        """The socket's file descriptor (for select)."""
        return self.sock.fileno()

    def close(self):
        """Drop the bytes not read yet and close the socket."""
        self.pending = b""
        self.sock.close()

    def send(self, header, arrays=()):
        """Send one frame (`send`) on this channel's socket."""
        send(self.sock, header, arrays)

    def _take(self, n, deadline):
        """Exactly `n` bytes (n is capped by the caller)."""
        data = self.pending
        if len(data) < n:
            parts, got = [data], len(data)
            while got < n:
                if self.sock is None:
                    raise ProtocolError("the frame is cut short")
                if deadline is not None:
                    _wait(self.sock, deadline)
                want = n - got
                if self.maxfds:
                    chunk, fds, _flags, _addr = socket.recv_fds(self.sock, max(want, self.chunk), self.maxfds)
                    self.fds += fds
                    self.maxfds = 0
                elif self.chunk:
                    chunk = self.sock.recv(max(want, self.chunk))
                else:
                    chunk = self.sock.recv(want, MSG_WAITALL if deadline is None else 0)
                if not chunk:
                    raise ChannelClosed("the other side closed the channel")
                parts.append(chunk)
                got += len(chunk)
            data = b"".join(parts)
        self.pending = data[n:]
        return data[:n]

    def _take_into(self, body, deadline):
        k = min(len(self.pending), len(body))
        if k:
            body[:k] = self.pending[:k]
            self.pending = self.pending[k:]
        if k < len(body):
            if self.sock is None:
                raise ProtocolError("the frame is cut short")
            _recv_into(self.sock, memoryview(body)[k:], deadline)

    def recv(self, deadline=None):
        """(header, arrays) from one frame; raises ProtocolError for anything malformed or too
        big.  Nothing is allocated for the arrays before every description has been checked."""
        magic, hlen, narr, blen = PREFIX.unpack(self._take(PREFIX.size, deadline))
        if magic != MAGIC:
            raise ProtocolError("not a frame of the grader's protocol")
        if hlen > MAX_HEADER or narr > MAX_ARRAYS or blen > MAX_FRAME:
            raise ProtocolError(f"frame too large ({hlen} bytes of header, {narr} arrays, {blen} bytes of arrays)")
        try:
            msg = _json_decode(self._take(hlen, deadline).decode("utf-8"))
        except (ValueError, RecursionError) as e:  # UnicodeDecodeError too; RecursionError: [[[[...]]]]
            raise ProtocolError(f"header is not JSON: {str(e)[:100]}") from None
        if not isinstance(msg, list) or len(msg) != 2:
            raise ProtocolError("header is not [message, arrays]")
        header, descs = msg
        if not isinstance(header, dict):
            raise ProtocolError("header is not an object")
        if not isinstance(descs, list) or len(descs) != narr:
            raise ProtocolError("the header does not describe the frame's arrays")
        specs, total = describe_arrays(descs)
        if total != blen:
            raise ProtocolError(f"the arrays need {total} bytes, the frame announces {blen}")
        if not blen:
            return header, arrays_from_body(specs, b"")
        body = bytearray(blen)  # writable: the student's code may (wrongly) modify its inputs
        self._take_into(body, deadline)
        return header, arrays_from_body(specs, body)

    def recv_fds(self, maxfds, deadline=None):
        """(header, arrays, file descriptors) of one frame sent with `fds` (send)."""
        self.maxfds, self.fds = maxfds, []
        try:
            header, arrays = self.recv(deadline)
        except BaseException:
            for fd in self.fds:
                os.close(fd)
            raise
        finally:
            self.maxfds = 0
        fds, self.fds = self.fds, []
        return header, arrays, fds


def recv(sock, deadline=None):
    """One frame from a bare socket, read exactly (nothing past the frame): see Channel.recv."""
    return Channel(sock, buffered=False).recv(deadline)


def close_other_fds(keep):
    """Close every file descriptor above 2 but `keep` (the worker must not reach the judge's pipes)."""
    keep = sorted(set(keep))
    lo = 3
    for fd in keep + [os.sysconf("SC_OPEN_MAX")]:
        if fd > lo:
            os.closerange(lo, fd)
        lo = max(lo, fd + 1)
