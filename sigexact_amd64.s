//go:build linux

#include "textflag.h"

// sigexactHandler is the signal handler of WithExactSignals, called by the kernel with the C
// ABI (DI = signal number) on the thread's alternate signal stack. It counts the delivery with
// atomic adds to sigexactCounts[sig] and sigexactPending, and wakes the owning loop by writing
// 1 to sigexactWakeFd with a raw write(2). It touches no Go runtime state; rt_sigreturn (through
// sigexactRestorer) restores every register it changed.
TEXT sigexactHandler<>(SB),NOSPLIT|NOFRAME,$0
	CMPQ	DI, $64
	JA	done
	LEAQ	·sigexactCounts(SB), BX
	MOVQ	$1, CX
	LOCK
	XADDQ	CX, (BX)(DI*8)
	MOVL	$1, CX
	LOCK
	XADDL	CX, ·sigexactPending(SB)
	MOVQ	·sigexactWakeFd(SB), DI
	CMPQ	DI, $0
	JL	done
	LEAQ	·sigexactOne(SB), SI
	MOVQ	$8, DX
	MOVQ	$1, AX // SYS_write
	SYSCALL
done:
	RET

// sigexactRestorer returns from the handler: rt_sigreturn(2).
TEXT sigexactRestorer<>(SB),NOSPLIT|NOFRAME,$0
	MOVQ	$15, AX // SYS_rt_sigreturn
	SYSCALL
	INT	$3

// func sigexactAddrs() (handler, restorer uintptr)
TEXT ·sigexactAddrs(SB),NOSPLIT,$0-16
	LEAQ	sigexactHandler<>(SB), AX
	MOVQ	AX, handler+0(FP)
	LEAQ	sigexactRestorer<>(SB), AX
	MOVQ	AX, restorer+8(FP)
	RET
