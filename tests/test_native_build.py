"""microrl_host.board.native: telling a board's architecture from sys.implementation._mpy and finding
the microrl_kernels.mpy it loads (what `microrl deploy` copies), shipped or $MICRORL_NATIVE_DIR's."""
import os

from microrl_host.board import native as nb


def _fake_mpy(folder, arch, version=6, sub=3):
    code = nb.MPY_ARCHS.index(arch)
    path = os.path.join(folder, arch, nb.MPY_NAME)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(bytes([ord("M"), version, (code << 2) | sub, 31]) + b"\0" * 16)
    return path


def _board(arch, sub=3):
    return 6 | (sub << 8) | (nb.MPY_ARCHS.index(arch) << 10)


def test_arch_from_board_mpy_value():
    assert nb.arch_from_mpy(2822) == "x64"  # the unix port here: .mpy 6.3, x64
    assert nb.arch_from_mpy(_board("armv7emsp")) == "armv7emsp"
    assert nb.arch_from_mpy(6 | (3 << 8)) is None  # no native code (e.g. the webassembly port)
    assert nb.arch_from_mpy(None) is None
    assert nb.mpy_version(2822) == (6, 3)


def test_mpy_for_arch_finds_matching_files_only(tmp_path, monkeypatch):
    monkeypatch.setenv("MICRORL_NATIVE_DIR", str(tmp_path))
    armv7 = _fake_mpy(str(tmp_path), "armv7emsp")
    assert nb.mpy_header(armv7) == (6, 3, "armv7emsp")
    assert nb.mpy_for_arch("armv7emsp") == armv7
    assert nb.mpy_for_arch("armv7emsp", board_mpy=_board("armv7emsp")) == armv7
    assert nb.mpy_for_arch("armv7emsp", board_mpy=_board("armv7emsp", sub=2)) is None  # another sub-version
    assert nb.mpy_for_arch(None) is None
    # a file in the wrong folder (its header says another architecture) is not offered
    wrong = _fake_mpy(str(tmp_path), "rv32imc")
    os.makedirs(str(tmp_path / "xtensawin"))
    os.replace(wrong, str(tmp_path / "xtensawin" / nb.MPY_NAME))
    assert nb.mpy_for_arch("xtensawin") == os.path.join(nb.version_dir(6, 3), "xtensawin", nb.MPY_NAME)  # the shipped one


def test_a_damaged_file_is_not_offered(tmp_path, monkeypatch):
    monkeypatch.setenv("MICRORL_NATIVE_DIR", str(tmp_path))
    (tmp_path / "armv6m").mkdir()
    (tmp_path / "armv6m" / nb.MPY_NAME).write_bytes(b"garbage")
    assert nb.mpy_for_arch("armv6m", _board("armv6m")) == os.path.join(nb.version_dir(6, 3), "armv6m", nb.MPY_NAME)  # the shipped one


def test_every_board_gets_the_shipped_module_it_loads():
    for arch in ("x64", "x86", "armv6m", "armv7m", "armv7emsp", "rv32imc", "xtensa", "xtensawin"):
        path, note = nb.for_board(_board(arch))
        assert path == os.path.join(nb.version_dir(6, 3), arch, nb.MPY_NAME), arch
    # ARM boards load modules of an older ARM architecture: Teensy 4 (armv7emdp), a Cortex-M4 without FPU
    assert nb.for_board(_board("armv7emdp"))[0].endswith(os.path.join("armv7emsp", nb.MPY_NAME))
    assert nb.for_board(_board("armv7em"))[0].endswith(os.path.join("armv7m", nb.MPY_NAME))


def test_boards_without_an_fpu_are_told_that_int16_is_faster():
    """The float kernels run in software floating point there: the int16 advice, in one line."""
    for arch in ("armv6m", "armv7m", "armv7em", "rv32imc", "xtensa"):
        path, note = nb.for_board(_board(arch))
        assert path and "no FPU" in note and "microrl export --int16" in note and "\n" not in note, arch
    for arch in ("x64", "x86", "armv7emsp", "armv7emdp"):
        assert nb.for_board(_board(arch))[1] is None, arch


def test_boards_without_a_module_get_one_line_saying_why():
    path, why = nb.for_board(_board("armv7m", sub=2))
    assert path is None and "the board loads .mpy v6.2 and the shipped kernels are .mpy v6.3" in why
    assert "microrl export --int16" in why  # no FPU there either
    path, why = nb.for_board(6 | (3 << 8))
    assert path is None and "runs no native code" in why
    for board in (_board("armv7m", sub=2), 6 | (3 << 8)):
        assert "\n" not in nb.for_board(board)[1]


def test_every_arch_name_is_microPythons():
    for arch in nb.loadable_archs("armv7emdp"):
        assert arch in nb.MPY_ARCHS
