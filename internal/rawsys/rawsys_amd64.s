//go:build linux

#include "textflag.h"

// func Syscall(trap, a1, a2, a3 uintptr) (r1 uintptr, errno unix.Errno)
// A syscall without the runtime's bookkeeping, like syscall.RawSyscall, in one frame instead
// of four (see doc.go). The kernel returns -errno in AX for errors (-4095..-1).
TEXT ·Syscall(SB),NOSPLIT,$0-48
	MOVQ	a1+8(FP), DI
	MOVQ	a2+16(FP), SI
	MOVQ	a3+24(FP), DX
	MOVQ	trap+0(FP), AX
	SYSCALL
	CMPQ	AX, $0xfffffffffffff001
	JLS	ok
	MOVQ	$-1, r1+32(FP)
	NEGQ	AX
	MOVQ	AX, errno+40(FP)
	RET
ok:
	MOVQ	AX, r1+32(FP)
	MOVQ	$0, errno+40(FP)
	RET

// func Syscall6(trap, a1, a2, a3, a4, a5, a6 uintptr) (r1 uintptr, errno unix.Errno)
TEXT ·Syscall6(SB),NOSPLIT,$0-72
	MOVQ	a1+8(FP), DI
	MOVQ	a2+16(FP), SI
	MOVQ	a3+24(FP), DX
	MOVQ	a4+32(FP), R10
	MOVQ	a5+40(FP), R8
	MOVQ	a6+48(FP), R9
	MOVQ	trap+0(FP), AX
	SYSCALL
	CMPQ	AX, $0xfffffffffffff001
	JLS	ok6
	MOVQ	$-1, r1+56(FP)
	NEGQ	AX
	MOVQ	AX, errno+64(FP)
	RET
ok6:
	MOVQ	AX, r1+56(FP)
	MOVQ	$0, errno+64(FP)
	RET

// func GStack() *[2]uintptr: the calling goroutine's g pointer, whose first two words are its
// stack bounds.
TEXT ·GStack(SB),NOSPLIT,$0-8
	MOVQ	(TLS), AX
	MOVQ	AX, ret+0(FP)
	RET

// func FramePointer() uintptr: the caller's frame pointer (BP; this function has no frame of
// its own, so BP is still the caller's).
TEXT ·FramePointer(SB),NOSPLIT|NOFRAME,$0-8
	MOVQ	BP, ret+0(FP)
	RET
