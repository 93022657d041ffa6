#include "textflag.h"

// func call2(fn, a0, a1 uintptr) uintptr
//
// Calls a C function of the vDSO with two arguments on a stack the Go
// frame provides: the top of this function's own 4 KiB frame, 16-byte
// aligned, so the C code pushes into memory this frame owns.
TEXT ·call2(SB), 0, $4096-32
	MOVQ	fn+0(FP), AX
	MOVQ	a0+8(FP), DI
	MOVQ	a1+16(FP), SI
	MOVQ	SP, R12
	LEAQ	4080(SP), R13
	ANDQ	$~15, R13
	MOVQ	R13, SP
	CALL	AX
	MOVQ	R12, SP
	MOVQ	AX, ret+24(FP)
	RET
