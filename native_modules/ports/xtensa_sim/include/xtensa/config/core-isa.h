/* What MicroPython's py/persistentcode.h reads to pick the .mpy architecture on Xtensa (the ESP32's
 * toolchain ships the real one): this core has windowed registers, so .mpy files are xtensawin. */
#define XCHAL_HAVE_WINDOWED 1
#define XCHAL_NUM_AREGS 64
