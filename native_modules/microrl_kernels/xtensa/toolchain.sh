#!/bin/sh
# Set up the ESP32 (xtensawin) compiler from Debian's own packages: Debian sid's clang-22/llvm-22
# (the Xtensa target with the esp32 CPU: windowed registers, FPU), unpacked into one folder and
# run through sid's own dynamic loader, so that nothing is installed into the system (sid's
# libLLVM needs glibc 2.38; Debian 12 has 2.36).
#
#   sh native_modules/microrl_kernels/xtensa/toolchain.sh [DIR]
#
# DIR defaults to $MICRORL_XTENSA_LLVM, else ~/.cache/microrl/xtensa-llvm. It gets:
#   DIR/root/        the unpacked packages (dpkg -x)
#   DIR/bin/         clang, llc, llvm-mc, llvm-objdump, llvm-readelf, llvm-nm: wrappers that run
#                    the sid binaries through sid's loader (clang with its resource dir)
#   DIR/VERSIONS     the packages and versions unpacked
# apt-get runs with its own sources file and state folders under DIR/apt (the system's apt
# configuration and package database are not touched); it needs network access to the Debian
# archive ($DEBIAN_MIRROR, default http://deb.debian.org/debian). Root is not needed.
# The other tools come from Debian 12 itself: apt-get install binutils-xtensa-lx106 (the linker
# of the qemu harness) qemu-system-misc (qemu-system-xtensa).
set -eu

DIR=${1:-${MICRORL_XTENSA_LLVM:-$HOME/.cache/microrl/xtensa-llvm}}
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
LLVM=${MICRORL_XTENSA_LLVM_VERSION:-22}  # the version the shipped module was built with
# clang-22, llc, llvm-mc and the shared libraries they load (sid's libc6 for its loader)
PACKAGES="clang-$LLVM llvm-$LLVM libllvm$LLVM libclang-cpp$LLVM libclang-common-$LLVM-dev \
libc6 libstdc++6 libgcc-s1 libxml2-16 libz3-4 libffi8 libedit2 libzstd1 libtinfo6 zlib1g libbsd0 libmd0"

mkdir -p "$DIR/apt/lists/partial" "$DIR/apt/cache/archives/partial" "$DIR/debs" "$DIR/bin"
DIR=$(cd "$DIR" && pwd)
cat > "$DIR/apt/sid.sources" <<EOF
Types: deb
URIs: $MIRROR
Suites: sid
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
: > "$DIR/apt/status"
APT_OPTS="-o Dir::Etc::SourceList=$DIR/apt/sid.sources -o Dir::Etc::SourceParts=/dev/null
 -o Dir::State=$DIR/apt -o Dir::State::Lists=$DIR/apt/lists -o Dir::State::status=$DIR/apt/status
 -o Dir::Cache=$DIR/apt/cache -o Debug::NoLocking=1 -o APT::Sandbox::User=$(id -un)"
# shellcheck disable=SC2086
apt-get -q $APT_OPTS update >/dev/null
# shellcheck disable=SC2086
(cd "$DIR/debs" && rm -f ./*.deb && apt-get -q $APT_OPTS download $PACKAGES >/dev/null)

rm -rf "$DIR/root"
mkdir -p "$DIR/root"
: > "$DIR/VERSIONS"
for deb in "$DIR"/debs/*.deb; do
    dpkg -x "$deb" "$DIR/root"
    dpkg-deb --show --showformat='${Package} ${Version}\n' "$deb" >> "$DIR/VERSIONS"
done

ROOT=$DIR/root
LOADER=$ROOT/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2
LIBS=$ROOT/usr/lib/x86_64-linux-gnu:$ROOT/usr/lib/llvm-$LLVM/lib
RESOURCE=$(ls -d "$ROOT/usr/lib/llvm-$LLVM/lib/clang/"*/ | head -n 1)
for tool in clang llc llvm-mc llvm-objdump llvm-readelf llvm-nm; do
    extra=""
    if [ "$tool" = clang ]; then
        # run through the loader, clang cannot find its headers from its own path
        extra="-resource-dir $RESOURCE"
    fi
    cat > "$DIR/bin/$tool" <<EOF
#!/bin/sh
exec "$LOADER" --library-path "$LIBS" "$ROOT/usr/lib/llvm-$LLVM/bin/$tool" $extra "\$@"
EOF
    chmod +x "$DIR/bin/$tool"
done

# the Xtensa target with the ESP32 CPU must be there
"$DIR/bin/llc" -march=xtensa -mcpu=help 2>&1 | grep -q "esp32" || { echo "llc in $DIR has no Xtensa esp32 CPU" >&2; exit 1; }
echo "Debian sid LLVM $LLVM for Xtensa in $DIR:"
grep -E "^(clang-$LLVM|llvm-$LLVM|libllvm$LLVM|libc6) " "$DIR/VERSIONS"
