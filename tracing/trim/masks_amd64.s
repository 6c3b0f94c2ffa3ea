//go:build amd64 && !purego

#include "textflag.h"

// MASK16(off): compare the 16 bytes at off(SI) with '"' (X8), '\\' (X9) and,
// OR-ed with 0x20 (X10), with '{' (X11) and '}' (X12); OR the byte masks,
// shifted to off, into R8, R9 and R10.
#define MASK16(off) \
	MOVOU off(SI), X0 \
	MOVOU X0, X1 \
	PCMPEQB X8, X1 \
	PMOVMSKB X1, AX \
	MOVOU X0, X2 \
	PCMPEQB X9, X2 \
	PMOVMSKB X2, BX \
	POR X10, X0 \
	MOVOU X0, X3 \
	PCMPEQB X11, X0 \
	PCMPEQB X12, X3 \
	POR X3, X0 \
	PMOVMSKB X0, CX \
	SHLQ $off, AX \
	SHLQ $off, BX \
	SHLQ $off, CX \
	ORQ AX, R8 \
	ORQ BX, R9 \
	ORQ CX, R10

#define SPLAT(c, x) \
	MOVQ c, AX \
	MOVQ AX, x \
	PUNPCKLQDQ x, x

// func structMasks(p *[64]byte) (quote, bslash, bracket uint64)
TEXT ·structMasks(SB), NOSPLIT, $0-32
	MOVQ p+0(FP), SI
	SPLAT($0x2222222222222222, X8)
	SPLAT($0x5c5c5c5c5c5c5c5c, X9)
	SPLAT($0x2020202020202020, X10)
	SPLAT($0x7b7b7b7b7b7b7b7b, X11)
	SPLAT($0x7d7d7d7d7d7d7d7d, X12)
	XORQ R8, R8
	XORQ R9, R9
	XORQ R10, R10
	MASK16(0)
	MASK16(16)
	MASK16(32)
	MASK16(48)
	MOVQ R8, quote+8(FP)
	MOVQ R9, bslash+16(FP)
	MOVQ R10, bracket+24(FP)
	RET
