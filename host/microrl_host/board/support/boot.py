# Run by the virtual board's MicroPython each time it starts (support/../virtual.py passes this
# text with -c, after the lines that set ROOT and FLASH_BLOCKS), then the REPL:
# - ROOT: the board folder's host path when the kernel did not make it the process's `/` already
#   (confine.py's "landlock" and "none"): the host's root is unmounted and the folder mounted at
#   `/` in its place, so that `/` on the board is its folder as on a board.
# - FLASH_BLOCKS: the filesystem is a littlefs image (flash.img in the folder) of that many
#   512-byte blocks, mounted at /flash as on a board, so a full filesystem fails as it does on
#   one (ENOSPC).
# - `machine` gets what boards have and the unix port lacks (reset, unique_id, freq).
import os
import sys
import vfs

if ROOT:
    vfs.umount("/")
    vfs.mount(vfs.VfsPosix(ROOT), "/")
    os.chdir("/")


class _Machine:
    """The unix port's `machine` module, plus reset() (exit code 109: the virtual board
    restarts the process as a hard reset), unique_id() and freq()."""

    def __getattr__(self, name):
        import umachine

        return getattr(umachine, name)

    def reset(self):
        raise SystemExit(109)

    def unique_id(self):
        return b"microrl-virtual"

    def freq(self, *args):
        return 240000000


sys.modules["machine"] = _Machine()


class _Flash:
    def __init__(self, path, blocks):
        self.f = open(path, "r+b")
        self.blocks = blocks

    def readblocks(self, n, buf, offset=0):
        self.f.seek(n * 512 + offset)
        self.f.readinto(buf)

    def writeblocks(self, n, buf, offset=0):
        self.f.seek(n * 512 + offset)
        self.f.write(buf)
        self.f.flush()

    def ioctl(self, op, arg):
        if op == 4:  # block count
            return self.blocks
        if op == 5:  # block size
            return 512
        return 0  # init, deinit, sync, erase: nothing to do for a file


def _mount_flash(blocks):
    try:
        open("/flash.img", "rb").close()
        fresh = False
    except OSError:
        with open("/flash.img", "wb") as f:
            f.write(b"\xff" * (blocks * 512))
        fresh = True
    dev = _Flash("/flash.img", blocks)
    if fresh:
        vfs.VfsLfs2.mkfs(dev)
    vfs.mount(vfs.VfsLfs2(dev), "/flash")
    os.chdir("/flash")


if FLASH_BLOCKS:
    _mount_flash(FLASH_BLOCKS)
del os, sys, vfs, ROOT, FLASH_BLOCKS, _Machine, _Flash, _mount_flash
