/* setjmp/longjmp for the windowed Xtensa ABI (setjmp.S), used by MicroPython's NLR. */
#ifndef XTENSA_SIM_SETJMP_H
#define XTENSA_SIM_SETJMP_H
typedef int jmp_buf[8];
int setjmp(jmp_buf env) __attribute__((returns_twice));
void longjmp(jmp_buf env, int val) __attribute__((noreturn));
#endif
