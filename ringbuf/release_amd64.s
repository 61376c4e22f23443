//go:build !race

#include "textflag.h"

// func storeRelease(addr *atomic.Uint64, v uint64)
// x86-TSO: a plain store has release semantics.
TEXT ·storeRelease(SB), NOSPLIT, $0-16
	MOVQ	addr+0(FP), AX
	MOVQ	v+8(FP), BX
	MOVQ	BX, 0(AX)
	RET
