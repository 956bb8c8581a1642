/* setjmp/longjmp for the windowed Xtensa ABI (MicroPython's NLR: MICROPY_NLR_SETJMP).
 * jmp_buf: [0] setjmp's a0 (return address and call size), [1] its a1 (stack pointer), [2..5]
 * the caller's a0-a3 as they were then. Both first spill every register window to the stack;
 * longjmp then puts the caller's a0-a3 back below setjmp's old stack pointer (where the window
 * underflow handler reads them; calls since setjmp have overwritten that area) and returns from
 * setjmp's frame: the caller's window is not live, so RETW takes the underflow exception, which
 * reloads the caller from the stack, and the caller sees setjmp return again. */

	.text
	.align 4
/* a2: depth; recursing through call12 frames pushes every older window out (64 registers). A
 * function that calls with call12 needs a 48-byte frame: its a4-a11 spill to its top 32 bytes. */
	.type xtensa_spill_windows, @function
xtensa_spill_windows:
	entry	a1, 48
	beqz	a2, 1f
	addi	a14, a2, -1
	movi	a8, xtensa_spill_windows
	callx12	a8
1:	retw

	.global setjmp
	.type setjmp, @function
	.align 4
setjmp:
	entry	a1, 48
	movi	a14, 8
	movi	a8, xtensa_spill_windows
	callx12	a8
	s32i	a0, a2, 0
	s32i	a1, a2, 4
	addi	a8, a1, -16
	l32i	a4, a8, 0
	l32i	a5, a8, 4
	l32i	a6, a8, 8
	l32i	a7, a8, 12
	s32i	a4, a2, 8
	s32i	a5, a2, 12
	s32i	a6, a2, 16
	s32i	a7, a2, 20
	movi	a2, 0
	retw

	.global longjmp
	.type longjmp, @function
	.align 4
longjmp:
	entry	a1, 48
	movi	a14, 8
	movi	a8, xtensa_spill_windows
	callx12	a8
	l32i	a0, a2, 0
	l32i	a1, a2, 4
	l32i	a4, a2, 8
	l32i	a5, a2, 12
	l32i	a6, a2, 16
	l32i	a7, a2, 20
	addi	a8, a1, -16
	s32i	a4, a8, 0
	s32i	a5, a8, 4
	s32i	a6, a8, 8
	s32i	a7, a8, 12
	movi	a2, 1
	movnez	a2, a3, a3	/* longjmp(env, 0) returns 1 */
	retw

	.section .note.GNU-stack, "", @progbits
