/* Bare-metal start-up for the kernels' qemu harness (harness.py): qemu-system-xtensa -M sim
 * -cpu de233_fpu, a core with windowed registers and a single-precision FPU like the ESP32's.
 * The sim machine starts at the reset vector 0xFE000000 whatever the ELF entry says; this code
 * then sets up what the ESP32's boot code would have: the window exception handlers (at VECBASE),
 * one live register window, the FPU (coprocessor 0) enabled, a stack, and PS with window
 * overflow exceptions on. harness_main's return value is the exit code (semihosting). */

#define SIMCALL .byte 0x00, 0x51, 0x00   /* llvm-mc knows no simcall mnemonic */

	.section .ResetVector.text, "ax"
	.global _ResetVector
_ResetVector:
	j	1f
	.align 4
2:	.long	_start
1:	l32r	a2, 2b
	jx	a2

/* The windowed ABI's spill and fill handlers at their architectural offsets from VECBASE: a
 * call4/8/12 frame's a0-a3 go to the 16 bytes below the callee's stack pointer, the rest of a
 * call8/12 frame below the stack pointer of the frame's own caller (Xtensa ISA, windowed
 * register option). */
	.section .WindowVectors.text, "ax"
	.global _WindowVectors
_WindowVectors:
	.org 0x00	/* overflow, call4 frame */
	s32e	a0, a5, -16
	s32e	a1, a5, -12
	s32e	a2, a5, -8
	s32e	a3, a5, -4
	rfwo
	.org 0x40	/* underflow, call4 frame */
	l32e	a0, a5, -16
	l32e	a1, a5, -12
	l32e	a2, a5, -8
	l32e	a3, a5, -4
	rfwu
	.org 0x80	/* overflow, call8 frame */
	s32e	a0, a9, -16
	l32e	a0, a1, -12
	s32e	a1, a9, -12
	s32e	a2, a9, -8
	s32e	a3, a9, -4
	s32e	a4, a0, -32
	s32e	a5, a0, -28
	s32e	a6, a0, -24
	s32e	a7, a0, -20
	rfwo
	.org 0xC0	/* underflow, call8 frame */
	l32e	a1, a9, -12
	l32e	a0, a9, -16
	l32e	a7, a1, -12
	l32e	a2, a9, -8
	l32e	a4, a7, -32
	l32e	a3, a9, -4
	l32e	a5, a7, -28
	l32e	a6, a7, -24
	l32e	a7, a7, -20
	rfwu
	.org 0x100	/* overflow, call12 frame */
	s32e	a0, a13, -16
	l32e	a0, a1, -12
	s32e	a1, a13, -12
	s32e	a2, a13, -8
	s32e	a3, a13, -4
	s32e	a4, a0, -48
	s32e	a5, a0, -44
	s32e	a6, a0, -40
	s32e	a7, a0, -36
	s32e	a8, a0, -32
	s32e	a9, a0, -28
	s32e	a10, a0, -24
	s32e	a11, a0, -20
	rfwo
	.org 0x140	/* underflow, call12 frame */
	l32e	a1, a13, -12
	l32e	a0, a13, -16
	l32e	a11, a1, -12
	l32e	a2, a13, -8
	l32e	a4, a11, -48
	l32e	a8, a11, -32
	l32e	a3, a13, -4
	l32e	a5, a11, -44
	l32e	a6, a11, -40
	l32e	a7, a11, -36
	l32e	a9, a11, -28
	l32e	a10, a11, -24
	l32e	a11, a11, -20
	rfwu
/* The user exception vector (PS.UM is set): MOVSP's alloca exception is handled, as the ESP32's
 * own firmware handles it; any other exception, and any kernel or double exception, ends the run
 * with exit status 100 + EXCCAUSE (0: illegal instruction, 32: coprocessor 0 disabled, ...). */
	.org 0x300
	j	.Lfault
	.org 0x340
	wsr	a0, excsave1
	rsr	a0, exccause
	bnei	a0, 5, 1f
	j	.Lalloca
1:	j	.Lfault
	.org 0x3C0
	j	.Lfault

/* MOVSP raises the alloca exception when the caller's registers are already spilled (LLVM's code
 * moves the stack pointer with MOVSP around calls with arguments on the stack): fill the caller's
 * frame back into the register file with the underflow handler of its size, whose RFWU returns to
 * the MOVSP, which then runs. The current function's a0 (saved in EXCSAVE1) says in its top two
 * bits how far below the caller's window is (call4, call8 or call12); PS.OWB is set to the current
 * window, which RFWU returns to. */
.Lalloca:
	rsr	a0, windowbase
	rotw	-1	/* the interrupted function's a0-a3 are now a4-a7 */
	rsr	a2, ps
	extui	a3, a2, 8, 4	/* PS.OWB */
	xor	a3, a3, a4	/* a4: the WINDOWBASE read above */
	rsr	a4, excsave1	/* the interrupted function's a0 back in place */
	slli	a3, a3, 8
	xor	a2, a2, a3	/* PS.OWB = the interrupted function's window */
	wsr	a2, ps
	rsync
	bbci	a4, 31, .Lfill4
	rotw	-1
	bbci	a8, 30, .Lfill8
	rotw	-1
	j	_WindowVectors + 0x140
.Lfill4:
	j	_WindowVectors + 0x40
.Lfill8:
	j	_WindowVectors + 0xC0

.Lfault:
	rsr	a3, exccause
	addi	a3, a3, 100
	movi	a2, 1	/* SYS_exit */
	SIMCALL
1:	j	1b

	.text
	.align 4
	.global _start
_start:
	movi	a2, _WindowVectors
	wsr	a2, vecbase
	movi	a2, 0
	wsr	a2, windowbase
	rsync
	movi	a2, 1
	wsr	a2, windowstart
	rsync
	movi	a2, 1	/* CPENABLE bit 0: the FPU; without it the first FP instruction faults */
	wsr	a2, cpenable
	rsync
	movi	a1, _stack_top
	addi	a1, a1, -48
	movi	a2, _stack_top
	addi	a3, a1, -12
	s32i	a2, a3, 0	/* the outermost frame's "caller's stack pointer", read when it is spilled */
	movi	a2, 0x00040020	/* PS: WOE (window overflow exceptions), UM, EXCM 0, INTLEVEL 0 */
	wsr	a2, ps
	rsync
	movi	a8, harness_main	/* through a register: bookworm's ld takes no call8 relocation */
	callx8	a8
	mov	a3, a10
	movi	a2, 1	/* SYS_exit with harness_main's result */
	SIMCALL
1:	j	1b

	.section .note.GNU-stack, "", @progbits
