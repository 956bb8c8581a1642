"""A C compiler for the ESP32 (xtensawin) from Debian's LLVM 22, in the shape MicroPython's
py/dynruntime.mk calls its gcc: `cc.py [flags] -c file.c -o file.o` (and `-dumpmachine`,
`--print-libgcc-file-name`, `--print-file-name=NAME`, `--version`). The Makefile makes
dynruntime.mk run it (xtensa/clang-as-gcc) and passes the llc flags in $MRL_XTENSA_LLC_FLAGS.

clang's driver refuses `-mcpu=esp32` and `llc -filetype=obj` rejects some of its own output, so
each file goes through three steps:
    clang --target=xtensa -S -emit-llvm   (the C flags given)
    llc   $MRL_XTENSA_LLC_FLAGS           (CPU and codegen flags, from the Makefile)
    llvm-mc -filetype=obj
and the object is then made readable by MicroPython's linker (tools/mpy_ld.py), which was
written for GNU as: see fix_for_mpy_ld() and name_sections_by_file(). Flags that do not apply
are dropped: -fpic (LLVM's Xtensa backend has no PIC model; its code reaches everything through
l32r literals, which mpy_ld relocates) and -fno-tree-loop-distribute-patterns (gcc only).

The toolchain is the folder native_modules/microrl_kernels/xtensa/toolchain.sh made:
$MICRORL_XTENSA_LLVM, else ~/.cache/microrl/xtensa-llvm (its bin/ has clang, llc, llvm-mc)."""
import os
import re
import shlex
import struct
import subprocess
import sys

DEFAULT_DIR = os.path.join(os.path.expanduser("~"), ".cache", "microrl", "xtensa-llvm")
DROPPED = ("-fpic", "-fPIC", "-fno-tree-loop-distribute-patterns")


def toolchain_dir():
    return os.environ.get("MICRORL_XTENSA_LLVM") or DEFAULT_DIR


def tool(name):
    path = os.path.join(toolchain_dir(), "bin", name)
    if not os.path.isfile(path):
        sys.exit("cc.py: %s not found: set up the ESP32 toolchain with "
                 "native_modules/microrl_kernels/xtensa/toolchain.sh (or point MICRORL_XTENSA_LLVM at it)" % path)
    return path


def run(cmd):
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.stderr.write(proc.stdout + proc.stderr)
        sys.exit("cc.py: failed: %s" % " ".join(shlex.quote(c) for c in cmd))
    return proc.stdout


def fix_for_mpy_ld(path):
    """Rewrite llvm-mc's object in place into the form GNU as gives and MicroPython's linker reads.

    1. The addends of section-relative R_XTENSA_32 relocations in literal sections go into the
    literal words themselves (and are zeroed in the relocation). llvm-mc writes `.literal
    .LCPI0_3, some_static_object` as a relocation against the section symbol with the offset in
    r_addend and 0 in the word; GNU as keeps the offset in the word and r_addend 0, which is the
    form mpy_ld reads (it asserts r_addend == 0 for section symbols and takes the offset from the
    word). Both mean the same address.

    2. Every l32r with a relocation gets 0 in its 16-bit offset field. llvm-mc leaves 0xffff there
    when the instruction is not 4-byte aligned (its own unresolved PC-relative value); GNU as
    leaves 0 and GNU ld overwrites the field, but mpy_ld ADDS its offset to the field: such an
    l32r loaded a word far outside the module (a garbage string pointer for SOURCE_HASH, a
    load/store error in a kernel call)."""
    with open(path, "rb") as f:
        data = bytearray(f.read())
    if data[:4] != b"\x7fELF" or data[4] != 1 or data[5] != 1:
        sys.exit("cc.py: %s is not a 32-bit little-endian ELF file" % path)
    shoff, = struct.unpack_from("<I", data, 0x20)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x2E)
    sections = [struct.unpack_from("<10I", data, shoff + i * shentsize) for i in range(shnum)]
    names_off = sections[shstrndx][4]

    def name(sec):
        end = data.index(b"\0", names_off + sec[0])
        return data[names_off + sec[0]:end].decode()

    SHT_RELA, STT_SECTION, R_XTENSA_32, R_XTENSA_SLOT0_OP = 4, 3, 1, 20
    moved = 0
    for sec in sections:
        if sec[1] != SHT_RELA:
            continue
        target = sections[sec[7]]  # sh_info: the section the relocations apply to
        if name(target).startswith(".text"):
            for k in range(sec[5] // 12):
                r_offset, r_info, r_addend = struct.unpack_from("<IIi", data, sec[4] + 12 * k)
                at = target[4] + r_offset
                if (r_info & 0xFF) == R_XTENSA_SLOT0_OP and data[at] & 0xF == 1:  # l32r: op0 = 1
                    data[at + 1:at + 3] = b"\0\0"
            continue
        if not name(target).startswith(".literal"):
            continue
        symtab = sections[sec[6]]  # sh_link
        for k in range(sec[5] // 12):
            at = sec[4] + 12 * k
            r_offset, r_info, r_addend = struct.unpack_from("<IIi", data, at)
            sym_off = symtab[4] + 16 * (r_info >> 8)
            st_info = data[sym_off + 12]
            if (r_info & 0xFF) == R_XTENSA_32 and (st_info & 0xF) == STT_SECTION and r_addend:
                word_at = target[4] + r_offset
                word, = struct.unpack_from("<I", data, word_at)
                struct.pack_into("<I", data, word_at, (word + r_addend) & 0xFFFFFFFF)
                struct.pack_into("<IIi", data, at, r_offset, r_info, 0)
                moved += 1
    literal_sections = [name(s) for s in sections if "literal" in name(s) and s[1] == 1]  # SHT_PROGBITS
    if len(literal_sections) > 1 or any(not n.startswith(".literal") for n in literal_sections):
        # mpy_ld keys literals by object file and offset: one literal section per object
        sys.exit("cc.py: %s has literal sections %s; MicroPython's linker takes one, named .literal*" % (path, literal_sections))
    with open(path, "wb") as f:
        f.write(data)
    return moved


def name_sections_by_file(text, out):
    """Give the code and data sections of this object names of its own (.text.<file>,
    .data.rel.ro.<file>, .rodata.str1.1.<file>; the literal pool becomes .literal.<file>).

    mpy_ld names the target of each literal that holds an address by section name and offset
    ("{section}+0x{offset}", without the object file) and keeps one GOT entry per name: a literal
    of kernels.o pointing at its .data.rel.ro+0 (mrl_dense_f's jump table) got the entry of
    module.o's .data.rel.ro+0 (the dense function object), and the kernel jumped into data. With
    names of their own per object the names are unique; mpy_ld and the linker scripts take any
    name starting .text, .data.rel.ro, .rodata, .literal."""
    tag = re.sub(r"[^A-Za-z0-9_]", "_", os.path.splitext(os.path.basename(out))[0])
    text = text.replace("\t.text\n", '\t.section\t.text.%s,"ax",@progbits\n' % tag)
    return re.sub(r'(\t\.section\t)(\.data\.rel\.ro|\.rodata[.\w]*|\.bss[.\w]*)(,)', r"\g<1>\g<2>.%s\g<3>" % tag, text)


def compile_c(args, src, out, llc_flags):
    base = os.path.splitext(out)[0]
    ll, asm = base + ".ll", base + ".s"
    clang_flags = [a for a in args if a not in DROPPED]
    run([tool("clang"), "--target=xtensa", "-S", "-emit-llvm"] + clang_flags + [src, "-o", ll])
    run([tool("llc"), "-march=xtensa"] + llc_flags + [ll, "-o", asm])
    # llc puts the literal pool of a function after a jump table in the section it is in (.rodata),
    # which makes a second literal section; the pools belong with the code
    with open(asm) as f:
        text = f.read()
    text = text.replace("\t.literal_position\n", "\t.text\n\t.literal_position\n")
    # const data holding addresses (the function objects, jump tables) goes where gcc -fpic puts
    # it, .data.rel.ro, whose relocations mpy_ld turns into load-time ones (in .rodata it would
    # take them for pc-relative references within the code)
    text = text.replace('\t.section\t.rodata,"a",@progbits\n', '\t.section\t.data.rel.ro,"aw",@progbits\n')
    if "\nmpy_init:" in text:
        # clang emits the only non-static function of module.c first, at offset 0 of .text, and
        # MicroPython v1.28's linker cannot then size its entry jump (it computes a jump to
        # offset 0 - 4): four bytes of padding, never executed, come first
        text = text.replace("\t.text\n", "\t.text\n\t.p2align\t2\n\t.byte\t0, 0, 0, 0\n", 1)
    text = name_sections_by_file(text, out)
    with open(asm, "w") as f:
        f.write(text)
    run([tool("llvm-mc"), "-triple=xtensa"] + [f for f in llc_flags if f.startswith(("-mcpu", "-mattr"))]
        + ["-filetype=obj", asm, "-o", out])
    fix_for_mpy_ld(out)


def main(argv):
    llc_flags = shlex.split(os.environ.get("MRL_XTENSA_LLC_FLAGS", ""))
    args = list(argv)
    if "-dumpmachine" in args:
        print("xtensa-esp32-elf")
        return
    if "--version" in args:
        sys.stdout.write(run([tool("clang"), "--version"]))
        return
    if any(a == "--print-libgcc-file-name" or a.startswith("--print-file-name=") for a in args):
        # no runtime library: the module needs none (mrl_math.h has division and sqrt)
        print("none")
        return
    if not any(f.startswith("-mcpu=") for f in llc_flags):
        sys.exit("cc.py: MRL_XTENSA_LLC_FLAGS must name the CPU (-mcpu=esp32): the Makefile sets it")
    if "-c" not in args or "-o" not in args:
        sys.exit("cc.py: usage: MRL_XTENSA_LLC_FLAGS='-mcpu=esp32 ...' cc.py [C flags] -c FILE.c -o FILE.o")
    out = args[args.index("-o") + 1]
    rest = args[: args.index("-o")] + args[args.index("-o") + 2:]
    sources = [a for a in rest if a.endswith((".c", ".S"))]
    if len(sources) != 1 or sources[0].endswith(".S"):
        sys.exit("cc.py: one C file per call, got %s" % sources)
    flags = [a for a in rest if a not in ("-c", sources[0])]
    compile_c(flags, sources[0], out, llc_flags)


if __name__ == "__main__":
    main(sys.argv[1:])
