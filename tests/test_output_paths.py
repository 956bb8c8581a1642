"""Output paths (issue 30, item 1): only a regular file is ever replaced. A device node, a named
pipe, a socket or a folder where a file goes is refused before any work, by every command that
writes and by the writers themselves (atomic.write_bytes, microrl.save, fixedpoint.save: a race
after the check); missing folders are made one level deep at most."""
import os
import socket
import stat

import pytest

from helpers import assert_refused
from helpers import run_microrl as microrl_cli

import microrl
from microrl import fixedpoint
from microrl_host import atomic

ROOT_ONLY = pytest.mark.skipif(os.geteuid() != 0, reason="mknod of a character device needs root")


def _null_device(path):
    os.mknod(str(path), 0o666 | stat.S_IFCHR, os.makedev(1, 3))  # what /dev/null is
    return path


def _socket(path):
    s = socket.socket(socket.AF_UNIX)
    s.bind(str(path))
    return s


def _specials(tmp_path):
    """{kind: path} of things that are not regular files, at paths a file could be written to."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    folder = tmp_path / "folder"
    folder.mkdir()
    out = {"a named pipe": fifo, "a folder": folder}
    if os.geteuid() == 0:
        out["a character device"] = _null_device(tmp_path / "node")
    return out


def test_unwritable_refuses_every_kind_of_non_regular_file(tmp_path):
    sock = _socket(tmp_path / "sock")
    try:
        specials = dict(_specials(tmp_path), **{"a socket": tmp_path / "sock"})
        for kind, path in specials.items():
            why = atomic.unwritable(str(path))
            assert why and (kind in why or "folder" in why), (kind, why)
        link = tmp_path / "link-to-fifo"
        link.symlink_to(tmp_path / "fifo")
        assert "symbolic link" in atomic.unwritable(str(link))
        loop = tmp_path / "loop"
        loop.symlink_to(loop)
        assert "cannot be used" in atomic.unwritable(str(loop))
    finally:
        sock.close()
    regular = tmp_path / "old.mrlp"
    regular.write_bytes(b"old")
    assert atomic.unwritable(str(regular)) is None  # a regular file is replaced


def test_missing_folders_are_made_one_level_deep_at_most(tmp_path):
    assert atomic.unwritable(str(tmp_path / "new" / "x.mrlp")) is None
    why = atomic.unwritable(str(tmp_path / "no" / "such" / "x.mrlp"))
    assert why and "%s does not exist" % (tmp_path / "no") in why
    assert atomic.unwritable(str(tmp_path / "new" / "run"), folder=True) is None  # the run folder and its parent
    assert "does not exist" in atomic.unwritable(str(tmp_path / "a" / "b" / "run"), folder=True)
    (tmp_path / "file").write_text("x")
    assert "a regular file, not a folder" in atomic.unwritable(str(tmp_path / "file"), folder=True)
    fifo = _specials(tmp_path)["a named pipe"]
    assert "a named pipe, not a folder" in atomic.unwritable(str(fifo), folder=True)
    assert not (tmp_path / "no").exists() and not (tmp_path / "a").exists() and not (tmp_path / "new").exists()


@pytest.mark.parametrize("kind", ["a named pipe", "a character device", "a folder"])
def test_the_writers_never_replace_what_is_not_a_regular_file(tmp_path, kind):
    """Defence in depth: a writer whose path became a device or a pipe after the command's check
    (a race) refuses, leaves it as it was and no temporary behind."""
    specials = _specials(tmp_path)
    if kind not in specials:
        pytest.skip("mknod of a character device needs root")
    path = str(specials[kind])
    before = os.stat(path)
    policy = microrl.Policy([3, 4, 1], ["relu", "tanh"])
    with pytest.raises(atomic.WriteError, match="not written"):
        atomic.write_bytes(path, b"data")
    with pytest.raises(microrl.NotAPolicyError, match="not a regular file"):
        microrl.save(path, policy)
    quantised = fixedpoint.quantise(policy, [[0.1, 0.2, 0.3], [-1.0, 0.5, 2.0]])
    with pytest.raises(microrl.NotAPolicyError, match="not a regular file"):
        fixedpoint.save(path, quantised)
    after = os.stat(path)
    assert stat.S_IFMT(after.st_mode) == stat.S_IFMT(before.st_mode) and after.st_ino == before.st_ino
    leftovers = [n for n in os.listdir(tmp_path) if n.endswith(".tmp")]
    assert leftovers == []


@pytest.mark.timeout(60)  # a regression blocks in open() for ever: fail, not hang
def test_a_pipe_at_the_temporary_name_does_not_block_a_save(tmp_path):
    path = str(tmp_path / "p.mrlp")
    os.mkfifo(path + ".tmp")  # opening it for writing would wait for a reader for ever
    # CPython's temporary has a name of its own, made with O_EXCL (two processes saving one path
    # never share one): the pipe is neither opened nor touched (on MicroPython the temporary is
    # path.tmp, checked to be no pipe or device before it is opened)
    microrl.save(path, microrl.Policy([3, 4, 1], ["relu", "tanh"]))
    assert microrl.load(path).sizes == [3, 4, 1]
    assert stat.S_ISFIFO(os.lstat(path + ".tmp").st_mode) and sorted(os.listdir(tmp_path)) == ["p.mrlp", "p.mrlp.tmp"]


def test_a_failed_save_leaves_no_temporary(tmp_path):
    path = str(tmp_path / "p.mrlp")
    with pytest.raises(ValueError):
        microrl.save(path, microrl.Policy([3, 70000, 1], ["relu", "tanh"]))  # wider than the format's u16
    assert os.listdir(tmp_path) == []


def test_a_symbolic_link_is_never_replaced_whatever_it_points_to(tmp_path):
    """/dev/stdout is a link to /proc/self/fd/1, which is a regular file when output is redirected
    to one: `--out /dev/stdout` replaced the machine's /dev/stdout with the policy (found while
    fixing this; restored by hand). A link is refused by the check and by every writer."""
    target = tmp_path / "redirected-output"
    target.write_text("what the shell wrote")
    links = {"to a regular file": target, "dangling": tmp_path / "nowhere"}
    policy = microrl.Policy([3, 4, 1], ["relu", "tanh"])
    for kind, to in links.items():
        link = tmp_path / ("link " + kind)
        link.symlink_to(to)
        assert "symbolic link" in atomic.unwritable(str(link)), kind
        with pytest.raises(atomic.WriteError, match="symbolic link"):
            atomic.write_bytes(str(link), b"data")
        with pytest.raises(microrl.NotAPolicyError, match="symbolic link"):
            microrl.save(str(link), policy)
        assert os.path.islink(link) and os.readlink(link) == str(to)
    assert target.read_text() == "what the shell wrote"
    link = tmp_path / "stdout"
    link.symlink_to(target)
    proc = microrl_cli("train", "pendulum", "--steps", 200, "--out", link, "--run-dir", tmp_path / "run")
    assert_refused(proc, "--out %s" % link, "symbolic link")
    assert os.path.islink(link) and target.read_text() == "what the shell wrote" and not (tmp_path / "run").exists()
    assert atomic.unwritable(str(tmp_path / "linked-folder"), folder=True) is None
    (tmp_path / "real-folder").mkdir()
    (tmp_path / "linked-folder").symlink_to(tmp_path / "real-folder")
    assert atomic.unwritable(str(tmp_path / "linked-folder"), folder=True) is None  # a run folder behind a link: written into, not replaced


@ROOT_ONLY
def test_train_does_not_replace_a_device_node(tmp_path):
    node = _null_device(tmp_path / "node")
    proc = microrl_cli("train", "pendulum", "--steps", 200, "--out", node, "--run-dir", tmp_path / "run")
    assert_refused(proc, "--out %s" % node, "a character device, not a regular file")
    assert stat.S_ISCHR(os.stat(node).st_mode)
    assert not (tmp_path / "run").exists()


def test_commands_refuse_a_named_pipe_as_output_before_any_work(tmp_path):
    from microrl import Policy, save

    policy = tmp_path / "p.mrlp"
    save(str(policy), Policy([3, 4, 1], ["relu", "tanh"]))
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    run = tmp_path / "run"
    run.mkdir()
    (run / "progress.csv").write_text("step,episode_return,eval_mean,eval_std\n1,-100,,\n")
    for args in (["train", "pendulum", "--steps", 200, "--out", fifo, "--run-dir", tmp_path / "r"],
                 ["export", policy, "--int16", "--out", fifo], ["render", policy, "--out", fifo], ["plot", run, "--out", fifo],
                 ["train-on-board", "--port", "/dev/null", "--steps", 10, "--out", fifo], ["demo", "--out", fifo]):
        assert_refused(microrl_cli(*args), "--out %s" % fifo, "a named pipe, not a regular file")
        assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    assert_refused(microrl_cli("train", "pendulum", "--out", tmp_path / "p2.mrlp", "--run-dir", fifo), "--run-dir %s" % fifo, "a named pipe, not a folder")
    assert_refused(microrl_cli("demo", "--board-dir", fifo, "--out", tmp_path / "d.mrlp"), "--board-dir %s" % fifo, "a named pipe, not a folder")
    assert not (tmp_path / "r").exists() and not (tmp_path / "p2.mrlp").exists() and not (tmp_path / "d.mrlp").exists()


def test_an_output_under_two_missing_folders_is_refused_and_nothing_is_made(tmp_path):
    from microrl import Policy, save

    policy = tmp_path / "p.mrlp"
    save(str(policy), Policy([3, 4, 1], ["relu", "tanh"]))
    deep = tmp_path / "nonexistent" / "dir" / "x.mrlp"
    for args in (["train", "pendulum", "--steps", 200, "--out", deep, "--run-dir", tmp_path / "r"], ["export", policy, "--int16", "--out", deep]):
        assert_refused(microrl_cli(*args), "%s does not exist" % (tmp_path / "nonexistent"))
    assert_refused(microrl_cli("sweep", "pendulum", "--algo", "td3", "--run-dir", tmp_path / "nonexistent" / "dir" / "sweep"), "does not exist")
    assert not (tmp_path / "nonexistent").exists() and not (tmp_path / "r").exists()


def test_sweep_refuses_a_file_as_its_folder(tmp_path):
    existing = tmp_path / "results.txt"
    existing.write_text("keep me")
    assert_refused(microrl_cli("sweep", "pendulum", "--algo", "td3", "--seeds", "0", "--run-dir", existing), "--run-dir %s" % existing, "a regular file, not a folder")
    assert existing.read_text() == "keep me"


def test_train_makes_one_missing_folder_for_its_outputs(tmp_path):
    out = tmp_path / "models" / "p.mrlp"
    proc = microrl_cli("train", "pendulum", "--steps", 300, "--eval-every", 0, "--out", out, "--quiet")
    assert proc.returncode == 0, proc.stderr
    assert out.is_file() and (tmp_path / "models" / "p.run" / "checkpoint.npz").is_file()
