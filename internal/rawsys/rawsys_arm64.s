//go:build linux

#include "textflag.h"

// func Syscall(trap, a1, a2, a3 uintptr) (r1 uintptr, errno unix.Errno)
// A syscall without the runtime's bookkeeping, like syscall.RawSyscall, in one frame instead
// of four (see doc.go). The kernel returns -errno in R0 for errors (-4095..-1).
TEXT ·Syscall(SB),NOSPLIT,$0-48
	MOVD	trap+0(FP), R8
	MOVD	a1+8(FP), R0
	MOVD	a2+16(FP), R1
	MOVD	a3+24(FP), R2
	MOVD	$0, R3
	MOVD	$0, R4
	MOVD	$0, R5
	SVC
	CMN	$4095, R0
	BCC	ok
	MOVD	$-1, R4
	MOVD	R4, r1+32(FP)
	NEG	R0, R0
	MOVD	R0, errno+40(FP)
	RET
ok:
	MOVD	R0, r1+32(FP)
	MOVD	ZR, errno+40(FP)
	RET

// func Syscall6(trap, a1, a2, a3, a4, a5, a6 uintptr) (r1 uintptr, errno unix.Errno)
TEXT ·Syscall6(SB),NOSPLIT,$0-72
	MOVD	trap+0(FP), R8
	MOVD	a1+8(FP), R0
	MOVD	a2+16(FP), R1
	MOVD	a3+24(FP), R2
	MOVD	a4+32(FP), R3
	MOVD	a5+40(FP), R4
	MOVD	a6+48(FP), R5
	SVC
	CMN	$4095, R0
	BCC	ok6
	MOVD	$-1, R4
	MOVD	R4, r1+56(FP)
	NEG	R0, R0
	MOVD	R0, errno+64(FP)
	RET
ok6:
	MOVD	R0, r1+56(FP)
	MOVD	ZR, errno+64(FP)
	RET

// func GStack() *[2]uintptr: the calling goroutine's g pointer, whose first two words are its
// stack bounds.
TEXT ·GStack(SB),NOSPLIT,$0-8
	MOVD	g, R0
	MOVD	R0, ret+0(FP)
	RET

// func FramePointer() uintptr: the caller's frame pointer (R29; this function has no frame of
// its own, so R29 is still the caller's).
TEXT ·FramePointer(SB),NOSPLIT|NOFRAME,$0-8
	MOVD	R29, R0
	MOVD	R0, ret+0(FP)
	RET
