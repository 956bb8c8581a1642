# Run by the virtual board at boot when it was given a flash size: the board's filesystem is a
# littlefs image (flash.img in the board folder) of that size, mounted at /flash as on a board,
# so a full filesystem fails as it does on one (ENOSPC).
import os
import vfs

BLOCK = 512


class _Flash:
    def __init__(self, path, blocks):
        self.f = open(path, "r+b")
        self.blocks = blocks

    def readblocks(self, n, buf, offset=0):
        self.f.seek(n * BLOCK + offset)
        self.f.readinto(buf)

    def writeblocks(self, n, buf, offset=0):
        self.f.seek(n * BLOCK + offset)
        self.f.write(buf)
        self.f.flush()

    def ioctl(self, op, arg):
        if op == 4:  # block count
            return self.blocks
        if op == 5:  # block size
            return BLOCK
        return 0  # init, deinit, sync, erase: nothing to do for a file


def _mount():
    blocks = int(os.getenv("MICRORL_FLASH_BLOCKS"))
    try:
        open("flash.img", "rb").close()
        fresh = False
    except OSError:
        with open("flash.img", "wb") as f:
            f.write(b"\xff" * (blocks * BLOCK))
        fresh = True
    dev = _Flash("flash.img", blocks)
    if fresh:
        vfs.VfsLfs2.mkfs(dev)
    vfs.mount(vfs.VfsLfs2(dev), "/flash")
    os.chdir("/flash")


_mount()
del _mount
