"""The judge/worker wire format: data only, checked before anything is allocated."""

import json
import socket
import struct
import threading
import time

import numpy as np
import pytest
import torch

from autograder.sandbox import protocol as P


def roundtrip(value):
    a, b = socket.socketpair()
    try:
        arrays = []
        P.send(a, {"v": P.encode(value, arrays)}, arrays)
        header, got = P.recv(b)
        return P.decode(header["v"], got)
    finally:
        a.close()
        b.close()


def raw_frame(header, descs, body=b"", magic=P.MAGIC, narr=None, blen=None):
    h = json.dumps([header, descs]).encode()
    narr = len(descs) if narr is None else narr
    blen = len(body) if blen is None else blen
    return P.PREFIX.pack(magic, len(h), narr, blen) + h + body


def recv_raw(data, close=True):
    a, b = socket.socketpair()
    try:
        a.sendall(data)
        if close:
            a.close()
        return P.recv(b)
    finally:
        a.close()
        b.close()


def test_values_roundtrip_as_plain_data():
    t = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    out = roundtrip((t, [True, None, 3, 2.5, "x"], torch.device("cpu"), torch.float64, torch.tensor(1.5)))
    assert torch.equal(out[0], t) and out[1] == [True, None, 3, 2.5, "x"]
    assert out[2] == torch.device("cpu") and out[3] is torch.float64
    assert out[4].shape == () and out[4].item() == 1.5  # 0-d stays 0-d


def test_dicts_with_str_keys_roundtrip_others_are_opaque():
    t = torch.ones(2, 3)
    cfg = {"use_pe": True, "lr": 0.01, "name": "x", "nested": {"w": t, "seeds": [0, 1]}}
    out = roundtrip(cfg)
    assert out.keys() == cfg.keys() and list(out) == list(cfg)  # order kept
    assert out["use_pe"] is True and out["lr"] == 0.01 and out["nested"]["seeds"] == [0, 1]
    assert torch.equal(out["nested"]["w"], t)
    assert [x.shape for x in P.flat_tensors(cfg)] == [(2, 3)]
    odd = roundtrip(({1: 2}, {"a": 1, 2: 3}))
    assert all(isinstance(o, P.Opaque) and "dict" in o.type_name for o in odd)

    class D(dict):  # a dict subclass (could lie in __getitem__) is not data
        pass

    assert isinstance(roundtrip(D(a=1)), P.Opaque)


def test_numpy_scalars_come_back_as_python_numbers():
    out = roundtrip((np.float64(1.5), np.float32(0.25), np.int64(-3), np.bool_(True), np.complex64(1j)))
    assert out[:4] == (1.5, 0.25, -3, True) and [type(o) for o in out[:4]] == [float, float, int, bool]
    assert isinstance(out[4], P.Opaque)


def test_container_snapshot_sees_lists_and_dicts_changed_in_place():
    t = torch.zeros(2)
    base = {"model": {"d": 4, "pe": True}, "seeds": [0, 1], "w": t}
    before = P.container_snapshot([base, "factor"])
    assert P.container_snapshot([t, 3, (t, 2.0)]) is None  # nothing mutable: nothing to compare
    assert P.container_snapshot([base, "factor"]) == before
    base["model"]["d"] = 8
    assert P.container_snapshot([base, "factor"]) != before
    base["model"]["d"] = 4
    base["w"] = t.clone()  # another tensor in its place
    assert P.container_snapshot([base, "factor"]) != before


def test_every_allowed_dtype_and_odd_shapes_roundtrip():
    values = [
        (torch.arange(7) % 2).to(dt)
        for dt in (
            torch.bool,
            torch.int8,
            torch.int16,
            torch.int32,
            torch.int64,
            torch.uint8,
            torch.float16,
            torch.float32,
            torch.float64,
        )
    ]
    values += [
        torch.zeros(0, 5),
        torch.randn(3, 4).t(),
        torch.randn(2, 3)[:, 1],
        -torch.ones(3),
        torch.tensor([float("nan"), float("inf"), -0.0]),
        torch.ones(2, 1, 3).expand(2, 4, 3),
        np.array(7, dtype=np.int64),
        np.zeros((2, 3), dtype=np.float32)[:, ::2],
    ]
    out = roundtrip(tuple(values))
    for v, o in zip(values, out):
        v = torch.as_tensor(v)
        o = torch.as_tensor(o)
        assert o.shape == v.shape and o.dtype == v.dtype
        assert torch.equal(torch.nan_to_num(o.float()), torch.nan_to_num(v.float()))
        assert o.numpy().flags.writeable and o.numpy().flags.aligned
    assert roundtrip(torch.randn(2, 2).requires_grad_()).requires_grad is False  # a plain tensor comes back


def test_bfloat16_keeps_its_dtype_both_ways():
    """numpy has no bfloat16: it travels as float32 (exact) and comes back as bfloat16, so a
    student's function sees the dtype the property gave it (it came back float32 before)."""
    x = torch.tensor([[1.5, -2.25, 3.0e38], [0.0, -0.0, 1e-30]], dtype=torch.bfloat16)
    out = roundtrip((x, x.float()))
    assert out[0].dtype == torch.bfloat16 and torch.equal(out[0], x)
    assert out[1].dtype == torch.float32
    arrays = []
    enc = P.encode(x.clone().requires_grad_(), arrays)
    assert set(enc) == {"bf", "rg"} and arrays[0].dtype == np.float32
    back = P.decode(enc, arrays, leaf_grads=True)
    assert back.dtype == torch.bfloat16 and back.requires_grad
    with pytest.raises(P.ProtocolError):  # a bfloat16 announced over a non-float32 array
        P.decode({"bf": 0, "rg": False}, [np.zeros(2, dtype=np.float64)])


def test_a_meta_tensor_crosses_as_its_dtype_and_shape():
    """A tensor on the `meta` device holds no data: it crosses as {"meta": [dtype, shape]} (no array)
    and comes back on meta, so the judge can read a device the worker built on (causal_mask)."""
    x = torch.empty(2, 3, dtype=torch.bool, device="meta")
    arrays = []
    enc = P.encode(x, arrays)
    assert enc == {"meta": ["bool", [2, 3]], "rg": False} and arrays == []
    out = roundtrip((x, torch.empty(0, 4, dtype=torch.bfloat16, device="meta"), torch.ones(2)))
    assert out[0].is_meta and out[0].dtype == torch.bool and out[0].shape == (2, 3)
    assert out[1].is_meta and out[1].dtype == torch.bfloat16 and out[1].shape == (0, 4)
    assert not out[2].is_meta and torch.equal(out[2], torch.ones(2))
    assert P.same_values(x, torch.empty(2, 3, dtype=torch.bool, device="meta")) and not P.same_values(
        x, torch.zeros(2, 3, dtype=torch.bool)
    )
    for bad in [
        {"meta": ["object", [2]]},
        {"meta": ["bool", [-1]]},
        {"meta": ["bool", "2"]},
        {"meta": "bool"},
        {"meta": ["bool", [1] * 40]},
    ]:
        with pytest.raises(P.ProtocolError):
            P.decode(bad, [])


def test_objects_come_back_as_opaque_names():
    class Liar(torch.Tensor):
        def __eq__(self, other):
            return True

    out = roundtrip(
        (
            object(),
            np.zeros(2),
            torch.ones(2).as_subclass(Liar),
            np.zeros(2, dtype=np.complex64),
            torch.zeros(2, dtype=torch.complex64),
            np.array([object()], dtype=object),
        )
    )
    assert isinstance(out[0], P.Opaque) and out[0].type_name == "object"
    assert isinstance(out[1], np.ndarray)
    assert type(out[2]) is torch.Tensor  # a subclass cannot cross: only its values do
    assert all(isinstance(o, P.Opaque) for o in out[3:])


def test_array_descriptions_are_checked_before_allocation():
    ok, total = P.describe_arrays([["float32", [2, 3]], ["bool", []], ["int64", [0, 9]]])
    assert total == 24 + 8 + 0 and [s[1] for s in ok] == [(2, 3), (), (0, 9)]
    for bad, match in [
        ([["object", [1]]], "not allowed"),
        ([["complex64", [1]]], "not allowed"),
        ([["<f4", [1]]], "not allowed"),  # dtype strings are never parsed, only looked up
        ([[["float32"], [1]]], "not allowed"),
        ([["float32", [-1]]], "shape"),
        ([["float32", [True, 2]]], "shape"),
        ([["float32", [2.0]]], "shape"),
        ([["float32", "(2, 2)"]], "shape"),
        ([["float32", [1] * 33]], "shape"),
        ([["float32", [99999, 99999]]], "too large"),
        ([["float64", [P.MAX_ARRAY]]], "too large"),
        ([["uint8", [P.MAX_ARRAY]]] * 5, "too large"),  # each fits, together more than a frame
        ([["float32"]], "description"),
        ("float32", "not a list"),
    ]:
        with pytest.raises(P.ProtocolError, match=match):
            P.describe_arrays(bad)


def test_frames_are_bounded_and_checked():
    a, b = socket.socketpair()
    P.send(a, {"x": 1}, [np.ones(3)])
    header, arrays = P.recv(b)
    assert header == {"x": 1} and arrays[0].tolist() == [1, 1, 1]
    a.sendall(P.PREFIX.pack(P.MAGIC, 0x7FFFFFFF, 0, 0))  # a 2 GB header announced
    with pytest.raises(P.ProtocolError, match="too large"):
        P.recv(b)
    a.close()
    with pytest.raises(P.ChannelClosed):
        P.recv(b)
    b.close()

    body = np.arange(4, dtype=np.float32).tobytes()
    assert recv_raw(raw_frame({}, [["float32", [4]]], body))[1][0].tolist() == [0, 1, 2, 3]
    for data, match in [
        (raw_frame({}, [], magic=b"JUNK"), "protocol"),
        (b'{"event": "result", "test": "x"}\n' * 3, "protocol"),  # fake results written on the channel
        (raw_frame({}, [["float32", [4]]], body, blen=P.MAX_FRAME + 8), "too large"),
        (raw_frame({}, [], narr=P.MAX_ARRAYS + 1), "too large"),
        (raw_frame({}, [["float32", [4]]], body[:12]), "need 16 bytes"),  # the header lies about the body
        (raw_frame({}, [["float32", [4]]], body + bytes(8)), "need 16 bytes"),
        (raw_frame({}, [["float32", [4]]], body, narr=2), "describe"),
        (raw_frame({}, [["object", [1]]], bytes(8)), "not allowed"),
        (raw_frame([], []), "not an object"),
        (P.PREFIX.pack(P.MAGIC, 4, 0, 0) + b"\xff\xfe{}", "not JSON"),
        (P.PREFIX.pack(P.MAGIC, 5, 0, 0) + b"{}{}x", "not JSON"),
        (P.PREFIX.pack(P.MAGIC, 20000, 0, 0) + b"[" * 10000 + b"]" * 10000, "not JSON"),
    ]:
        with pytest.raises(P.ProtocolError, match=match):
            recv_raw(data)


def test_a_short_frame_is_a_closed_channel_not_a_hang():
    frame = raw_frame({"x": 1}, [["float64", [1000]]], bytes(8000))
    for cut in (3, P.PREFIX.size + 5, len(frame) - 1):
        with pytest.raises(P.ChannelClosed):
            recv_raw(frame[:cut])


def test_a_socket_travels_with_a_frame_on_a_stream_and_on_a_seqpacket_socket():
    """The sandbox server's and a zygote's messages are frames too, some carrying a socket."""
    for kind in (socket.SOCK_STREAM, socket.SOCK_SEQPACKET):
        a, b = socket.socketpair(socket.AF_UNIX, kind)
        left, right = socket.socketpair()
        P.send(a, {"pid": 7}, [np.arange(3)], fds=[right.fileno()])
        right.close()
        if kind == socket.SOCK_SEQPACKET:  # one datagram, the whole frame and nothing more
            msg, fds, _, _ = socket.recv_fds(b, 1 << 16, 2)
            header, arrays = P.parse(msg)
            P.send(a, {"next": 1})
            assert P.parse(b.recv(1 << 16))[0] == {"next": 1}  # no empty datagram in between
        else:
            header, arrays, fds = P.Channel(b, buffered=False).recv_fds(2)
        assert header == {"pid": 7} and arrays[0].tolist() == [0, 1, 2] and len(fds) == 1
        passed = socket.socket(fileno=fds[0])
        passed.sendall(b"hi")
        assert left.recv(2) == b"hi"
        for s in (a, b, left, passed):
            s.close()


def test_a_datagram_is_one_whole_frame():
    frame = raw_frame({"x": 1}, [["int64", [2]]], struct.pack("<qq", 5, 6))
    header, arrays = P.parse(frame)
    assert header == {"x": 1} and arrays[0].tolist() == [5, 6]
    for data, match in [
        (frame[:-3], "cut short"),
        (frame[:5], "cut short"),
        (frame + b"x", "after the frame"),
        (b'ready{"pid": 1, "problems": []}', "protocol"),
    ]:
        with pytest.raises(P.ProtocolError, match=match):
            P.parse(data)


def test_deadline_and_slow_sender():
    a, b = socket.socketpair()
    frame = raw_frame({"x": 1}, [["int64", [2]]], struct.pack("<qq", 5, 6))
    a.sendall(frame[:7])
    with pytest.raises(P.ChannelTimeout):
        P.recv(b, deadline=time.monotonic() + 0.05)
    a.close()
    b.close()
    a, b = socket.socketpair()

    def dribble():
        for i in range(len(frame)):
            a.sendall(frame[i : i + 1])
            time.sleep(0.001)

    th = threading.Thread(target=dribble)
    th.start()
    header, arrays = P.recv(b, deadline=time.monotonic() + 10)
    th.join()
    assert header == {"x": 1} and arrays[0].tolist() == [5, 6]
    a.close()
    b.close()


def test_bad_values_are_protocol_errors():
    for enc in [
        {"t": 5},
        {"t": "0"},
        {"float": "not a float"},
        {"tuple": [1] * 65},
        {"list": "x"},
        {"dict": [[1, 2]]},
        {"dict": [["a"]]},
        {"dict": "x"},
        {"a": 1, "b": 2, "c": 3},
        [1, 2],
        "str",
    ]:
        with pytest.raises(P.ProtocolError):
            P.decode(enc, [])
    assert isinstance(P.decode({"device": "no such device"}, []), P.Opaque)
    assert isinstance(P.decode({"dtype": "Tensor"}, []), P.Opaque)


def test_same_values():
    x = torch.tensor([1.0, float("nan"), -0.0])
    assert P.same_values(x, x.clone()) and P.same_values(x, torch.tensor([1.0, float("nan"), 0.0]))
    assert not P.same_values(x, torch.tensor([1.0, 2.0, 0.0]))
    assert not P.same_values(x, x.double()) and not P.same_values(x, x[:2])
    assert P.same_values(torch.arange(3), torch.arange(3)) and not P.same_values(torch.arange(3), torch.arange(1, 4))
