# Run by the virtual board's MicroPython each time it starts (virtual.py passes this text with
# -c, after the lines that set ROOT and FLASH_BLOCKS, and without the flash part when there is
# no flash: compiled code takes heap), then the REPL:
# - ROOT: the board folder's host path when the kernel did not make it the process's `/`
#   already (confine.py's "landlock" and "none"; under "bwrap" it is the process's root): the
#   host's root is unmounted and the folder mounted at `/` in its place, so that `/` on the
#   board is its folder as on a board.
# - `machine` gets what boards have and the unix port lacks (reset, unique_id, freq).
# - FLASH_BLOCKS: the filesystem is a littlefs image (flash.img in the folder, made erased by
#   the host) of that many 512-byte blocks, mounted at /flash as on a board, so a full
#   filesystem fails as it does on one (ENOSPC); the folder is then unmounted: the image is the
#   board's whole filesystem (the kernel lets the process write that one file and no other).
import sys

if ROOT:
    import os
    import vfs

    vfs.umount("/")
    vfs.mount(vfs.VfsPosix(ROOT), "/")
    os.chdir("/")
    del os, vfs


class _Machine:
    # the unix port's `machine`, plus reset() (exit code 109: the virtual board restarts the
    # process as a hard reset), unique_id() and freq()
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
del sys, _Machine, ROOT
# --- flash: only when FLASH_BLOCKS
import os  # noqa: E402
import vfs  # noqa: E402


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
    dev = _Flash("/flash.img", blocks)
    head = bytearray(1024)  # blocks 0 and 1, where littlefs keeps its superblock
    dev.readblocks(0, head)
    if head == b"\xff" * 1024:  # erased (the host made it): not formatted yet
        vfs.VfsLfs2.mkfs(dev)
    vfs.umount("/")  # the folder: the image is all the board has
    vfs.mount(vfs.VfsLfs2(dev), "/flash")
    os.chdir("/flash")


_mount_flash(FLASH_BLOCKS)
del os, vfs, _Flash, _mount_flash, FLASH_BLOCKS
