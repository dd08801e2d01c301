#include "textflag.h"

// func getg() uintptr: the current goroutine's g pointer, from TLS.
TEXT ·getg(SB),NOSPLIT,$0-8
	MOVQ (TLS), AX
	MOVQ AX, ret+0(FP)
	RET
