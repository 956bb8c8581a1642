#!/bin/sh
# The preprocessor MicroPython's qstr extraction runs over many files at once: clang -E one file
# at a time (run through sid's loader, clang cannot start a second process of itself).
CLANG=${XTENSA_LLVM:-${MICRORL_XTENSA_LLVM:-$HOME/.cache/microrl/xtensa-llvm}}/bin/clang
flags=""
files=""
for a in "$@"; do
    case "$a" in
        *.c|-) files="$files $a" ;;
        *) flags="$flags '$(printf %s "$a" | sed "s/'/'\\\\''/g")'" ;;
    esac
done
for f in $files; do
    if [ "$f" = - ]; then lang="-x c"; else lang=""; fi
    eval "\"$CLANG\" --target=xtensa -E $flags $lang \"$f\"" || exit 1
done
