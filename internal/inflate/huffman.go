package inflate

import (
	"encoding/binary"
	"fmt"
)

// huffman decodes a Huffman-coded block into p from op until the block
// ends, p is full or the input fails, and returns the new output
// position. The fast loop runs while the input has fastInput bytes left
// and p has fastRoom: then one refill of bitbuf (56 bits or more) covers
// a whole literal/length and distance pair, and a match can be copied in
// 8-byte words without looking at p's end. The careful loop does the rest
// one symbol at a time.
func (z *Reader) huffman(p []byte, op int) int {
	// reach is how far back a match may point from op: this member's
	// output so far.
	reach := z.memberOut - int64(op) // memberOut counts up to op
	lit, dist := z.lit, z.dist
	// The primary tables as arrays: an index masked to their size needs
	// no bounds check.
	litTop, distTop := (*[1 << litBits]uint32)(lit), (*[1 << distBits]uint32)(dist)
	bitbuf, bitsleft := z.bitbuf, z.bitsleft
	in, ip := z.in, z.ip
	const litMask, distMask = 1<<litBits - 1, 1<<distBits - 1
	var err error
	if z.zeros > 0 {
		goto careful // past the end of input: only the careful loop knows
	}
fast:
	for ip+fastInput <= len(in) && op+fastRoom <= len(p) {
		// Refill to 56-63 bits: the bits above bitsleft that this word
		// leaves in bitbuf are the stream's next bits, so the next refill
		// may OR them in again.
		bitbuf |= binary.LittleEndian.Uint64(in[ip:]) << bitsleft
		ip += int((63 - bitsleft) >> 3)
		bitsleft |= 56

		e := litTop[bitbuf&litMask]
		if e&flagLink != 0 {
			e = lit[e>>16+uint32(bitbuf>>litBits)&(1<<(e>>8&31)-1)]
		}
		bitbuf >>= e & 0xff
		bitsleft -= uint(e & 0xff)
		if e&flagLiteral != 0 {
			p[op] = byte(e >> 16)
			op++
			// A second literal fits in the bits left (at least 41).
			e = litTop[bitbuf&litMask]
			if e&(flagLiteral|flagLink) != flagLiteral {
				continue
			}
			bitbuf >>= e & 0xff
			bitsleft -= uint(e & 0xff)
			p[op] = byte(e >> 16)
			op++
			continue
		}
		if e&0xff == 0 {
			err = fmt.Errorf("%w: invalid literal/length code", ErrCorrupt)
			break
		}
		if e&flagEOB != 0 {
			z.st = stBlock
			break
		}
		extra := e >> 8 & 31
		length := int(e>>16) + int(bitbuf&(1<<extra-1))
		bitbuf >>= extra
		bitsleft -= uint(extra)

		d := distTop[bitbuf&distMask]
		if d&flagLink != 0 {
			d = dist[d>>16+uint32(bitbuf>>distBits)&(1<<(d>>8&31)-1)]
		}
		if d&0xff == 0 {
			err = fmt.Errorf("%w: invalid distance code", ErrCorrupt)
			break
		}
		bitbuf >>= d & 0xff
		bitsleft -= uint(d & 0xff)
		extra = d >> 8 & 31
		distance := int(d>>16) + int(bitbuf&(1<<extra-1))
		bitbuf >>= extra
		bitsleft -= uint(extra)

		if int64(distance) > reach+int64(op) {
			err = fmt.Errorf("%w: distance %d reaches before the stream's start", ErrCorrupt, distance)
			break
		}
		if distance >= 16 && distance <= op {
			// Whole words, 16 bytes a turn (a match may end up to 15
			// bytes short of what was written: fastRoom allows it); a
			// long match that does not overlap itself goes to memmove.
			src := op - distance
			if length > 64 && distance >= length {
				copy(p[op:op+length], p[src:src+length])
				op += length
				continue fast
			}
			for i := 0; i < length; i += 16 {
				a := binary.LittleEndian.Uint64(p[src+i:])
				b := binary.LittleEndian.Uint64(p[src+i+8:])
				binary.LittleEndian.PutUint64(p[op+i:], a)
				binary.LittleEndian.PutUint64(p[op+i+8:], b)
			}
			op += length
			continue fast
		}
		if distance >= 8 && distance <= op {
			src := op - distance
			for i := 0; i < length; i += 8 {
				binary.LittleEndian.PutUint64(p[op+i:], binary.LittleEndian.Uint64(p[src+i:]))
			}
			op += length
			continue fast
		}
		if distance == 1 && op > 0 {
			// A run of one byte (indentation, zeros): written 8 at a time.
			v := uint64(p[op-1]) * 0x0101010101010101
			for i := 0; i < length; i += 8 {
				binary.LittleEndian.PutUint64(p[op+i:], v)
			}
			op += length
			continue fast
		}
		op += z.copyMatch(p, op, distance, length)
	}
	z.bitbuf, z.bitsleft, z.ip = bitbuf, bitsleft, ip
careful:
	if err == nil && z.st == stHuffman {
		op, err = z.careful(p, op, reach)
	}
	if err != nil {
		z.err = err
	}
	return op
}

// careful decodes one symbol at a time until the block ends, p is full,
// or the fast loop can take over again.
func (z *Reader) careful(p []byte, op int, reach int64) (int, error) {
	for op < len(p) {
		if z.zeros == 0 && z.ip+fastInput <= len(z.in) && op+fastRoom <= len(p) {
			return op, nil // back to the fast loop (the caller's next step)
		}
		z.need(maxCodeLen + 5)
		e, err := z.symbol(z.lit, litBits, "literal/length")
		if err != nil {
			return op, err
		}
		if e&flagLiteral != 0 {
			p[op] = byte(e >> 16)
			op++
			continue
		}
		if e&flagEOB != 0 {
			z.st = stBlock
			return op, nil
		}
		length := int(e>>16) + int(z.bits(uint(e>>8&31)))
		z.need(maxCodeLen + 13)
		d, err := z.symbol(z.dist, distBits, "distance")
		if err != nil {
			return op, err
		}
		distance := int(d>>16) + int(z.bits(uint(d>>8&31)))
		if !z.bitsValid() {
			return op, z.inputErr()
		}
		if int64(distance) > reach+int64(op) {
			return op, fmt.Errorf("%w: distance %d reaches before the stream's start", ErrCorrupt, distance)
		}
		n := z.copyMatch(p, op, distance, length)
		op += n
		if n < length {
			z.matchLen, z.matchDist = length-n, distance
		}
	}
	return op, nil
}

// symbol decodes the next symbol with table t (bitbuf holds enough bits)
// and consumes its code; what names the alphabet in errors.
func (z *Reader) symbol(t []uint32, primary uint, what string) (uint32, error) {
	e := t[z.bitbuf&(1<<primary-1)]
	if e&flagLink != 0 {
		e = t[e>>16+uint32(z.bitbuf>>primary)&(1<<(e>>8&31)-1)]
	}
	if e&0xff == 0 {
		if !z.bitsValid() {
			return 0, z.inputErr()
		}
		return 0, fmt.Errorf("%w: invalid %s code", ErrCorrupt, what)
	}
	z.bitbuf >>= e & 0xff
	z.bitsleft -= uint(e & 0xff)
	if !z.bitsValid() {
		return 0, z.inputErr()
	}
	return e, nil
}
