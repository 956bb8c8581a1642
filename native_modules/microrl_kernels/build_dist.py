"""Rebuild every shipped microrl_kernels.mpy, and the manifest beside them.

    python3 build_dist.py --mpy-dir /path/to/micropython        (or: make dist MPY_DIR=...)

MPY_DIR is a MicroPython source tree checked out at RELEASE (the tree is yours, outside this
repository; it is never committed). Each architecture is built with MicroPython's
py/dynruntime.mk in a temporary copy of these sources, with the hash of the sources compiled in
(microrl_kernels.SOURCE_HASH), and copied to host/microrl_host/board/native/mpy<v>.<s>/<arch>/;
manifest.json there records architecture, .mpy version, size, sha256 and source hash of each file.
See README.md for compilers and timings."""
import argparse
import datetime
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "host"))
from microrl_host.board import native  # noqa: E402  (the one definition of the source hash and layout)

RELEASE = "v1.28.0"  # .mpy 6.3, like every release from v1.23.0 on
ARCHS = ("x64", "x86", "armv6m", "armv7m", "armv7emsp", "rv32imc", "xtensa", "xtensawin")
# the gcc each architecture is built with; xtensawin: Debian sid's clang/LLVM 22 through
# xtensa/cc.py (xtensa/toolchain.sh sets it up; the Makefile points dynruntime.mk at it)
CROSS = {"x64": "", "x86": "", "armv6m": "arm-none-eabi-", "armv7m": "arm-none-eabi-", "armv7emsp": "arm-none-eabi-",
         "rv32imc": "riscv64-unknown-elf-", "xtensa": "xtensa-lx106-elf-", "xtensawin": os.path.join(HERE, "xtensa", "clang-as-")}


def _git_describe(mpy_dir):
    proc = subprocess.run(["git", "-C", mpy_dir, "describe", "--tags", "--dirty"], capture_output=True, text=True)
    return proc.stdout.strip() if proc.returncode == 0 else "unknown"


def _compiler(arch):
    try:
        out = subprocess.run([CROSS[arch] + "gcc", "--version"], capture_output=True, text=True).stdout
    except OSError:
        return None
    first = out.splitlines()[0] if out else None
    if arch == "xtensawin" and first:
        sys.path.insert(0, os.path.join(HERE, "xtensa"))
        import cc

        # the Debian packages it came from, as xtensa/toolchain.sh recorded them
        versions = os.path.join(cc.toolchain_dir(), "VERSIONS")
        if os.path.isfile(versions):
            with open(versions) as f:
                packages = [line.strip() for line in f if line.startswith(("clang-", "llvm-"))]
            first += " (Debian sid %s; llc -mcpu=esp32)" % ", ".join(packages)
    return first


def _check_toolchain(archs):
    """Exit with one line per missing compiler, saying how to install it."""
    problems = []
    for arch in archs:
        if arch == "xtensawin":
            sys.path.insert(0, os.path.join(HERE, "xtensa"))
            import cc

            if not os.path.isfile(os.path.join(cc.toolchain_dir(), "bin", "llc")):
                problems.append("xtensawin: Debian's LLVM 22 not found in %s: run native_modules/microrl_kernels/xtensa/toolchain.sh "
                                "(or set MICRORL_XTENSA_LLVM), or leave it out with --arch" % cc.toolchain_dir())
        elif shutil.which(CROSS[arch] + "gcc") is None:
            problems.append("%s: %sgcc not found (README.md, Rebuilding, names the Debian packages)" % (arch, CROSS[arch]))
    if problems:
        sys.exit("\n".join(problems))


def entry_jump_miss(mpy_dir, arch, module_o):
    """Bytes by which the .mpy's entry jump misses mpy_init (0: it lands on it). MicroPython
    v1.28.0's mpy_ld aims the jump at the start of the first text section as if it followed the jump
    directly; when that section's alignment pads it (x64 and x86 at gcc -O2: 16), the jump lands
    early, in the code before mpy_init. Architectures whose jump mpy_ld aims after layout (xtensa,
    xtensawin) cannot miss."""
    sys.path.insert(0, os.path.join(mpy_dir, "tools"))
    try:
        import mpy_ld
        from elftools.elf.elffile import ELFFile
    finally:
        sys.path.pop(0)
    data = mpy_ld.ARCH_DATA[arch]
    if getattr(data, "delayed_entry_offset", False):
        return 0
    with open(module_o, "rb") as f:
        elf = ELFFile(f)
        align = elf.get_section_by_name(".text")["sh_addralign"]
        entry = [s for s in elf.get_section_by_name(".symtab").iter_symbols() if s.name == "mpy_init"][0]["st_value"]
    jump = len(data.asm_jump(entry))
    return (-jump) % max(1, align)


def build(mpy_dir, arch, source_hash, work):
    """One architecture; returns the path of the built .mpy. SystemExit with make's output tail."""
    src = os.path.join(work, arch)
    shutil.copytree(HERE, src, ignore=shutil.ignore_patterns("build", "build-*", "*.mpy", "__pycache__"))
    cmd = ["make", "-j2", "MPY_DIR=" + mpy_dir, "ARCH=" + arch, "MICRORL_SOURCE_HASH=" + source_hash]
    # mpy_ld walks Python sets of symbols: a fixed hash seed makes the same sources give the same bytes
    proc = subprocess.run(cmd, cwd=src, capture_output=True, text=True, env=dict(os.environ, PYTHONHASHSEED="0"))
    path = os.path.join(src, native.MPY_NAME)
    if proc.returncode != 0 or not os.path.isfile(path):
        sys.exit("building %s failed (%s):\n%s%s" % (arch, " ".join(cmd), proc.stdout[-2000:], proc.stderr[-2000:]))
    miss = entry_jump_miss(mpy_dir, arch, os.path.join(src, "build", "module.o"))
    if miss:
        sys.exit("%s: the module's entry jump lands %d bytes before mpy_init (module.o's text is aligned: see the Makefile's x64/x86 flags)" % (arch, miss))
    return path


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mpy-dir", default=os.environ.get("MPY_DIR"), help="MicroPython source tree at %s (default $MPY_DIR)" % RELEASE)
    parser.add_argument("--arch", action="append", choices=sorted(CROSS), help="only these architectures (repeat); default: %s" % " ".join(ARCHS))
    parser.add_argument("--any-release", action="store_true", help="build from a tree that is not at %s (recorded in the manifest)" % RELEASE)
    args = parser.parse_args(argv)
    if not args.mpy_dir or not os.path.isfile(os.path.join(args.mpy_dir, "py", "dynruntime.mk")):
        parser.error("--mpy-dir (or MPY_DIR) must name a MicroPython source tree (py/dynruntime.mk not found in %r)" % args.mpy_dir)
    mpy_dir = os.path.abspath(args.mpy_dir)
    release = _git_describe(mpy_dir)
    if release != RELEASE and not args.any_release:
        parser.error("%s is at %s, not %s: `git -C %s checkout %s`, or pass --any-release" % (mpy_dir, release, RELEASE, mpy_dir, RELEASE))
    archs = args.arch or list(ARCHS)
    _check_toolchain(archs)
    source_hash = native.source_hash(HERE)
    built = {}
    with tempfile.TemporaryDirectory() as work:
        for arch in archs:
            start = time.time()
            path = build(mpy_dir, arch, source_hash, work)
            version, sub, file_arch = native.mpy_header(path)
            if file_arch != arch:
                sys.exit("%s: the built file says architecture %s" % (arch, file_arch))
            dest = os.path.join(native.version_dir(version, sub), arch, native.MPY_NAME)
            os.makedirs(os.path.dirname(dest), exist_ok=True)
            shutil.copyfile(path, dest)
            built.setdefault((version, sub), {})[arch] = {
                "path": "%s/%s" % (arch, native.MPY_NAME),
                "arch": arch,
                "mpy_version": "%d.%d" % (version, sub),
                "size": os.path.getsize(dest),
                "sha256": native.file_sha256(dest),
                "source_hash": source_hash,
                "compiler": _compiler(arch),
            }
            print("%-10s %6d bytes  .mpy %d.%d  %.0f s" % (arch, os.path.getsize(dest), version, sub, time.time() - start))
    for (version, sub), entries in built.items():
        folder = native.version_dir(version, sub)
        path = os.path.join(folder, native.MANIFEST)
        old = {}
        if os.path.isfile(path):
            with open(path) as f:
                old = json.load(f).get("files", {})
        old.update(entries)
        data = {
            "module": native.MODULE,
            "mpy_version": "%d.%d" % (version, sub),
            "micropython": release,
            "built": datetime.date.today().isoformat(),
            "source_files": native.source_files(HERE),
            "files": {k: old[k] for k in sorted(old)},
        }
        tmp = path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(data, f, indent=1, sort_keys=False)
            f.write("\n")
        os.replace(tmp, path)
        print("wrote %s" % os.path.relpath(path, ROOT))


if __name__ == "__main__":
    main()
