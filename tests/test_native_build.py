"""microrl_host.board.native: telling a board's architecture from sys.implementation._mpy and
finding a prebuilt microrl_kernels.mpy for it (what `microrl deploy` copies)."""
import os

from microrl_host.board import native as nb


def _fake_mpy(folder, arch, version=6, sub=3):
    code = nb._MPY_ARCHS.index(arch)
    path = os.path.join(folder, arch, nb.MPY_NAME)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(bytes([ord("M"), version, (code << 2) | sub, 31]) + b"\0" * 16)
    return path


def test_arch_from_board_mpy_value():
    assert nb.arch_from_mpy(2822) == "x64"  # the unix port here: .mpy 6.3, x64
    assert nb.arch_from_mpy(6 | (3 << 8) | (7 << 10)) == "armv7emsp"
    assert nb.arch_from_mpy(6 | (3 << 8)) is None  # no native code (e.g. the webassembly port)
    assert nb.arch_from_mpy(None) is None


def test_mpy_for_arch_finds_matching_files_only(tmp_path, monkeypatch):
    monkeypatch.setenv("MICRORL_NATIVE_DIR", str(tmp_path))
    armv7 = _fake_mpy(str(tmp_path), "armv7emsp")
    assert nb.mpy_header(armv7) == (6, 3, "armv7emsp")
    assert nb.mpy_for_arch("armv7emsp") == armv7
    board = 6 | (3 << 8) | (7 << 10)
    assert nb.mpy_for_arch("armv7emsp", board_mpy=board) == armv7
    assert nb.mpy_for_arch("armv7emsp", board_mpy=6 | (2 << 8) | (7 << 10)) is None  # another sub-version
    assert nb.mpy_for_arch(None) is None
    # a file in the wrong folder (its header says another architecture) is not offered
    wrong = _fake_mpy(str(tmp_path), "rv32imc")
    os.makedirs(str(tmp_path / "xtensawin"))
    os.replace(wrong, str(tmp_path / "xtensawin" / nb.MPY_NAME))
    assert nb.mpy_for_arch("xtensawin") is None
    (tmp_path / "armv6m").mkdir()
    (tmp_path / "armv6m" / nb.MPY_NAME).write_bytes(b"garbage")
    assert nb.mpy_for_arch("armv6m") is None


def test_every_supported_arch_is_described():
    for arch in nb.ARCHS:
        assert arch in nb._MPY_ARCHS
