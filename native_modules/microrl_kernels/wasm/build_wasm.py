"""Build microrl_kernels.wasm: the float kernels of kernels.c for the browser page (microrl web;
the device core's native backend: dense forward and backward, Adam, Polyak, copy),
with Debian's clang-16 and lld-16 (apt-get install clang-16 lld-16), and its manifest.

    python3 native_modules/microrl_kernels/wasm/build_wasm.py [--out DIR]

The module imports its memory (env.memory): the page instantiates it on MicroPython-webassembly's
own memory, so the kernels read and write the arrays of the device core in place. It must
therefore own no memory of its own: the build fails if the linked module has a data segment or
touches a global (the stack pointer), which would write over MicroPython's memory.
Output (default host/microrl_host/web/): microrl_kernels.wasm and microrl_kernels.json (size,
sha256, compiler, flags, and the hash of the sources and of this script)."""
import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_DIR = os.path.dirname(HERE)
ROOT = os.path.dirname(os.path.dirname(SOURCE_DIR))
OUT_DIR = os.path.join(ROOT, "host", "microrl_host", "web")
sys.path.insert(0, os.path.join(ROOT, "host"))
from microrl_host.board import native  # noqa: E402  (the one definition of the C sources' hash)

CLANG = "clang-16"
WASM_LD = "wasm-ld-16"
OBJDUMP = "llvm-objdump-16"
NAME = "microrl_kernels.wasm"
MANIFEST = "microrl_kernels.json"
# -msimd128: the four partial sums of the dense kernel and the row updates of the backward pass
# become f32x4 lanes, each lane the same sequence of float operations as the scalar code (no
# reassociation: -ffp-contract=off, no fast-math), so results equal the x64 module's.
# f32.sqrt is correctly rounded, as x64's sqrtss: MRL_HW_SQRTF.
CFLAGS = ["--target=wasm32", "-std=c99", "-O2", "-msimd128", "-nostdlib", "-ffreestanding", "-fno-math-errno", "-ffp-contract=off",
          "-DMRL_HW_SQRTF=1"]
EXPORTS = ("mrl_dense_f", "mrl_dense_backward_f", "mrl_adam_f", "mrl_polyak_f", "mrl_copy_f")
LDFLAGS = ["--no-entry", "--import-memory", "--strip-all", "--gc-sections"] + ["--export=" + e for e in EXPORTS]


def source_hash():
    """The C sources' hash (as the .mpy files carry) and this script's bytes (its flags)."""
    h = hashlib.sha256(native.source_hash(SOURCE_DIR).encode())
    with open(os.path.abspath(__file__), "rb") as f:
        h.update(f.read())
    return h.hexdigest()


def _sections(data):
    """[(id, payload)] of a wasm binary."""
    assert data[:8] == b"\0asm\1\0\0\0", "not a wasm module"
    out, i = [], 8
    while i < len(data):
        sid = data[i]
        i += 1
        n = shift = 0
        while True:
            b = data[i]
            i += 1
            n |= (b & 0x7F) << shift
            shift += 7
            if b < 0x80:
                break
        out.append((sid, data[i:i + n]))
        i += n
    return out


def check_module(path):
    """Problems that would make the module write memory it does not own (empty list: none)."""
    with open(path, "rb") as f:
        data = f.read()
    problems = []
    ids = [sid for sid, _ in _sections(data)]
    if 11 in ids:
        problems.append("it has a data segment (constant tables): it would be written over MicroPython's memory")
    if 8 in ids:
        problems.append("it has a start function")
    if shutil.which(OBJDUMP):
        listing = subprocess.run([OBJDUMP, "-d", path], capture_output=True, text=True, check=True).stdout
        if "global." in listing:
            problems.append("its code uses the stack pointer (a global): the stack would lie in MicroPython's memory")
    else:
        problems.append("%s not found (apt-get install llvm-16): cannot check the code for stack use" % OBJDUMP)
    return problems


def tool_versions():
    first = subprocess.run([CLANG, "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    return first


def build(out_dir):
    """Compile and link into out_dir; returns the .wasm path. SystemExit with the tool's message."""
    for tool in (CLANG, WASM_LD):
        if shutil.which(tool) is None:
            sys.exit("%s not found: apt-get install -y clang-16 lld-16" % tool)
    with tempfile.TemporaryDirectory() as work:
        obj = os.path.join(work, "kernels.o")
        out = os.path.join(work, NAME)
        for cmd in ([CLANG] + CFLAGS + ["-c", os.path.join(SOURCE_DIR, "kernels.c"), "-o", obj], [WASM_LD] + LDFLAGS + [obj, "-o", out]):
            proc = subprocess.run(cmd, capture_output=True, text=True)
            if proc.returncode != 0:
                sys.exit("%s failed:\n%s%s" % (" ".join(cmd), proc.stdout, proc.stderr))
        problems = check_module(out)
        if problems:
            sys.exit("%s: %s" % (NAME, "; ".join(problems)))
        os.makedirs(out_dir, exist_ok=True)
        target = os.path.join(out_dir, NAME)
        shutil.copyfile(out, target)
    return target


def manifest_for(path):
    with open(path, "rb") as f:
        data = f.read()
    return {"module": NAME, "exports": list(EXPORTS), "size": len(data), "sha256": hashlib.sha256(data).hexdigest(),
            "source_hash": source_hash(), "source_files": native.source_files(SOURCE_DIR), "compiler": tool_versions(),
            "cflags": CFLAGS, "ldflags": LDFLAGS}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", default=OUT_DIR, help="folder for the .wasm and its manifest (default: the package's web folder)")
    args = p.parse_args(argv)
    path = build(args.out)
    with open(os.path.join(args.out, MANIFEST), "w") as f:
        json.dump(manifest_for(path), f, indent=1)
        f.write("\n")
    print("%s: %d bytes" % (path, os.path.getsize(path)))


if __name__ == "__main__":
    main()
