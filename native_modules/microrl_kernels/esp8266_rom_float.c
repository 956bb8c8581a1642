/* ESP8266 (ARCH=xtensa) only: the software floating point that gcc calls on a core without an FPU.
 * Debian's xtensa-lx106 libgcc leaves these out because every ESP8266 has them in its mask ROM,
 * and the firmware itself links them there (MicroPython's ports/esp8266/boards/eagle.rom.addr.v6.ld,
 * from Espressif's SDK, gives the addresses below). A native module cannot name an absolute
 * symbol, so each helper here jumps to its ROM address; the arguments pass through unchanged
 * (call0 ABI, floats in integer registers). */
#if defined(__XTENSA__) && !defined(__XTENSA_WINDOWED_ABI__)

#define ROM(name, ret, params, args, addr) \
    ret name params { return ((ret (*) params)(addr)) args; }

ROM(__addsf3, float, (float a, float b), (a, b), 0x4000c180)
ROM(__subsf3, float, (float a, float b), (a, b), 0x4000c268)
ROM(__mulsf3, float, (float a, float b), (a, b), 0x4000c3dc)
ROM(__adddf3, double, (double a, double b), (a, b), 0x4000c538)
ROM(__subdf3, double, (double a, double b), (a, b), 0x4000c688)
ROM(__muldf3, double, (double a, double b), (a, b), 0x4000c8f0)
ROM(__divdf3, double, (double a, double b), (a, b), 0x4000cb94)
ROM(__extendsfdf2, double, (float a), (a), 0x4000cdfc)
ROM(__truncdfsf2, float, (double a), (a), 0x4000cd5c)
ROM(__fixdfsi, int, (double a), (a), 0x4000ccb8)
ROM(__floatsisf, float, (int a), (a), 0x4000e2ac)
ROM(__floatsidf, double, (int a), (a), 0x4000e2f0)
ROM(__floatunsisf, float, (unsigned a), (a), 0x4000e2a4)

#endif
