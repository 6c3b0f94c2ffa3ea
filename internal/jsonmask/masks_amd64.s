//go:build amd64 && !purego

#include "textflag.h"

// BLOCK16 compares the 16 bytes at off(SI) and ORs the bit masks, shifted
// by off, into R8 (quotes), R9 (backslashes) and R10 (brackets).
#define BLOCK16(off) \
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

// func structMasks(p *[64]byte) (quote, bslash, bracket uint64)
TEXT ·StructMasks(SB), NOSPLIT, $0-32
	MOVQ p+0(FP), SI
	MOVQ $0x2222222222222222, AX
	MOVQ AX, X8
	PUNPCKLQDQ X8, X8
	MOVQ $0x5c5c5c5c5c5c5c5c, AX
	MOVQ AX, X9
	PUNPCKLQDQ X9, X9
	MOVQ $0x2020202020202020, AX
	MOVQ AX, X10
	PUNPCKLQDQ X10, X10
	MOVQ $0x7b7b7b7b7b7b7b7b, AX
	MOVQ AX, X11
	PUNPCKLQDQ X11, X11
	MOVQ $0x7d7d7d7d7d7d7d7d, AX
	MOVQ AX, X12
	PUNPCKLQDQ X12, X12
	XORQ R8, R8
	XORQ R9, R9
	XORQ R10, R10
	BLOCK16(0)
	BLOCK16(16)
	BLOCK16(32)
	BLOCK16(48)
	MOVQ R8, quote+8(FP)
	MOVQ R9, bslash+16(FP)
	MOVQ R10, bracket+24(FP)
	RET
