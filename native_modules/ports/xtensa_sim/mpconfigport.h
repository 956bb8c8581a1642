/* MicroPython configuration of the xtensa_sim port: qemu-system-xtensa -M sim -cpu de233_fpu, a
 * windowed Xtensa core with a single-precision FPU standing in for the ESP32 (see README.md). The
 * native emitter, the .mpy loader and the floats are the ESP32 port's: xtensawin, float32. */
#include <stdint.h>
#include <alloca.h>

#define MICROPY_CONFIG_ROM_LEVEL    (MICROPY_CONFIG_ROM_LEVEL_EXTRA_FEATURES)

#define MICROPY_EMIT_XTENSAWIN      (1)
#define MICROPY_EMIT_INLINE_XTENSA  (0)
#define MICROPY_PERSISTENT_CODE_LOAD (1)
#define MICROPY_FLOAT_IMPL          (MICROPY_FLOAT_IMPL_FLOAT)
#define MICROPY_LONGINT_IMPL        (MICROPY_LONGINT_IMPL_MPZ)
#define MICROPY_NLR_SETJMP          (1)   /* setjmp.S: windowed-ABI setjmp/longjmp */
#define MICROPY_ENABLE_GC           (1)
#define MICROPY_ENABLE_EMERGENCY_EXCEPTION_BUF (1)
#define MICROPY_MALLOC_USES_ALLOCATED_SIZE (1)
#define MICROPY_WARNINGS            (1)
#define MICROPY_HELPER_REPL         (1)
#define MICROPY_PY_SYS_PLATFORM     "xtensa_sim"
#define MICROPY_PY_ASYNCIO          (0)
/* LLVM 22 cannot select the constant-pool load it makes of a choice between two float constants
 * in objcomplex.c ("Cannot select ... TargetConstantPool [2 x float]") */
#define MICROPY_PY_BUILTINS_COMPLEX (0)
#define MICROPY_PY_CMATH            (0)
#define MICROPY_PY_TIME             (1)
#define MICROPY_PY_TIME_TIME_TIME_NS (0)
#define MICROPY_PY_OS               (1)
#define MICROPY_PY_RANDOM_SEED_INIT_FUNC (12345)
/* the device core and the tests come in a ROMFS image that qemu's loader puts at ROMFS_ADDR */
#define MICROPY_READER_VFS          (1)
#define MICROPY_VFS                 (1)
#define MICROPY_VFS_ROM             (1)
#define MICROPY_VFS_ROM_IOCTL       (1)
#define MICROPY_USE_INTERNAL_ERRNO  (1)
#define MICROPY_USE_INTERNAL_PRINTF (1)
#define MICROPY_STACK_CHECK_MARGIN  (1024)

#ifndef MICROPY_HEAP_SIZE
#define MICROPY_HEAP_SIZE           (1024 * 1024)
#endif
#define ROMFS_ADDR                  (0x00800000)
#define ROMFS_SIZE                  (0x00200000)

#define MP_SSIZE_MAX (0x7fffffff)
typedef long mp_off_t;
#define MP_NEED_LOG2 (1)
#define MP_STATE_PORT MP_STATE_VM
