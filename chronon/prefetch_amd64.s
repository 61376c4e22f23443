#include "textflag.h"

// func prefetchLines(lines []uintptr)
//
// Four lines an iteration: the loop's own instructions are most of the
// cost of a prefetch.
TEXT ·prefetchLines(SB), NOSPLIT, $0-24
	MOVQ lines_base+0(FP), SI
	MOVQ lines_len+8(FP), CX
	CMPQ CX, $4
	JLT tail
loop4:
	MOVQ 0(SI), AX
	MOVQ 8(SI), BX
	MOVQ 16(SI), DX
	MOVQ 24(SI), DI
	PREFETCHT0 (AX)
	PREFETCHT0 (BX)
	PREFETCHT0 (DX)
	PREFETCHT0 (DI)
	ADDQ $32, SI
	SUBQ $4, CX
	CMPQ CX, $4
	JGE loop4
tail:
	TESTQ CX, CX
	JEQ done
loop1:
	MOVQ (SI), AX
	PREFETCHT0 (AX)
	ADDQ $8, SI
	DECQ CX
	JNE loop1
done:
	RET
