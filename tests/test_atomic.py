"""Atomic writes: the new file appears whole, with the permissions a plain open() would give,
and a failed write leaves the old file and no temporary behind."""
import os

import numpy as np
import pytest

from microrl_host import atomic

def test_new_file_whole_with_the_usual_permissions(tmp_path):
    plain = tmp_path / "plain.bin"
    plain.write_bytes(b"x")
    path = atomic.write_bytes(str(tmp_path / "sub" / "a.bin"), b"hello")
    assert open(path, "rb").read() == b"hello"
    assert os.stat(path).st_mode & 0o777 == os.stat(plain).st_mode & 0o777  # not mkstemp's 0600
    atomic.write_npz(str(tmp_path / "c.npz"), {"w": np.arange(3.0)}, compress=True)
    with np.load(str(tmp_path / "c.npz")) as z:
        assert z["w"].tolist() == [0.0, 1.0, 2.0]

def test_failed_write_keeps_the_old_file(tmp_path):
    path = str(tmp_path / "p.bin")
    atomic.write_bytes(path, b"old")

    with pytest.raises(TypeError):
        atomic.write_bytes(path, object())  # fails inside the write
    assert open(path, "rb").read() == b"old"
    assert sorted(os.listdir(tmp_path)) == ["p.bin"]


def test_replacing_keeps_the_old_files_mode(tmp_path):
    path = str(tmp_path / "policy.mrlp")
    atomic.write_bytes(path, b"one")
    os.chmod(path, 0o640)
    atomic.write_bytes(path, b"two")
    assert open(path, "rb").read() == b"two"
    assert os.stat(path).st_mode & 0o777 == 0o640
