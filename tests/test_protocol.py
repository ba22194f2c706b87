"""The judge/worker wire format: data only, checked before anything is allocated."""
import io
import socket

import numpy as np
import pytest
import torch

from autograder.sandbox import protocol as P


def roundtrip(value):
    arrays = []
    enc = P.encode(value, arrays)
    return P.decode(enc, [P.npy_to_array(a) for a in arrays])


def test_values_roundtrip_as_plain_data():
    t = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    out = roundtrip((t, [True, None, 3, 2.5, "x"], torch.device("cpu"), torch.float64, torch.tensor(1.5)))
    assert torch.equal(out[0], t) and out[1] == [True, None, 3, 2.5, "x"]
    assert out[2] == torch.device("cpu") and out[3] is torch.float64
    assert out[4].shape == () and out[4].item() == 1.5  # 0-d stays 0-d


def test_objects_come_back_as_opaque_names():
    class Liar(torch.Tensor):
        def __eq__(self, other):
            return True

    out = roundtrip((object(), np.zeros(2), torch.ones(2).as_subclass(Liar)))
    assert isinstance(out[0], P.Opaque) and out[0].type_name == "object"
    assert isinstance(out[1], np.ndarray)
    assert type(out[2]) is torch.Tensor  # a subclass cannot cross: only its values do


def _npy(a):
    buf = io.BytesIO()
    np.save(buf, a, allow_pickle=True)
    return buf.getvalue()


def test_npy_checks_reject_objects_and_lies():
    with pytest.raises(P.ProtocolError, match="not allowed"):
        P.npy_to_array(_npy(np.array([object()], dtype=object)))
    with pytest.raises(P.ProtocolError, match="not allowed"):
        P.npy_to_array(_npy(np.zeros(3, dtype=np.complex64)))
    good = _npy(np.zeros((2, 2), dtype=np.float32))
    with pytest.raises(P.ProtocolError, match="does not match"):
        P.npy_to_array(good[:-4])  # header says 16 bytes, 12 follow
    huge = good.replace(b"(2, 2)", b"(99999, 99999)")
    with pytest.raises(P.ProtocolError):
        P.npy_to_array(huge)
    with pytest.raises(P.ProtocolError):
        P.npy_to_array(b"\x93NUMPY garbage")


def test_frames_are_bounded():
    a, b = socket.socketpair()
    P.send(a, {"x": 1}, [P.array_to_npy(np.ones(3))])
    header, arrays = P.recv(b)
    assert header == {"x": 1} and arrays[0].tolist() == [1, 1, 1]
    a.sendall(b"\xff\xff\xff\x7f\x00\x00\x00\x00")  # a 2 GB header announced
    with pytest.raises(P.ProtocolError, match="too large"):
        P.recv(b)
    a.close()
    with pytest.raises(P.ChannelClosed):
        P.recv(b)
