package inflate

import (
	"errors"
	"math/bits"
	"slices"
)

// A decoding table maps the next bits of the stream (least significant
// first, as deflate packs them) to an entry that says what they code and
// how many bits that takes. Codes longer than the primary table's bits go
// through a subtable chosen by their first primaryBits bits.
//
// Entry layout (uint32):
//
//	bits 0-7   bits the code takes (for a subtable link: 0)
//	bits 8-12  extra bits that follow the code (length, distance), or the
//	           subtable's index bits for a link
//	bit 13     link to a subtable
//	bit 14     end of block
//	bit 15     literal
//	bits 16-31 the literal byte, the length or distance base, or the
//	           subtable's offset
//
// An entry of 0 is a code the block's table does not define: the stream
// is corrupt.
const (
	flagLink    = 1 << 13
	flagEOB     = 1 << 14
	flagLiteral = 1 << 15

	litBits  = 10 // primary bits of the literal/length table
	distBits = 8  // primary bits of the distance table
	clenBits = 7  // the code-length code is at most 7 bits: no subtables

	maxCodeLen = 15
	numLitLen  = 288
	numDist    = 32
	numClen    = 19
)

var (
	lengthBase  = [29]uint16{3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258}
	lengthExtra = [29]uint8{0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0}
	distBase    = [30]uint16{1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769, 1025, 1537, 2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577}
	distExtra   = [30]uint8{0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13}
	// clenOrder is the order code-length code lengths are sent in.
	clenOrder = [numClen]uint8{16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15}
)

var (
	errOversubscribed = errors.New("inflate: invalid Huffman code (over-subscribed)")
	errIncomplete     = errors.New("inflate: invalid Huffman code (incomplete)")
)

// symbolEntry gives the table entry of a symbol of the given alphabet.
type symbolEntry func(sym int) uint32

func litLenEntry(sym int) uint32 {
	switch {
	case sym < 256:
		return flagLiteral | uint32(sym)<<16
	case sym == 256:
		return flagEOB
	case sym < 286:
		i := sym - 257
		return uint32(lengthExtra[i])<<8 | uint32(lengthBase[i])<<16
	}
	return 0 // 286 and 287 take part in the code but are never valid
}

func distEntry(sym int) uint32 {
	if sym < 30 {
		return uint32(distExtra[sym])<<8 | uint32(distBase[sym])<<16
	}
	return 0
}

// clenEntry marks its entries as literals only so that symbol 0 is not
// an entry of 0.
func clenEntry(sym int) uint32 { return flagLiteral | uint32(sym)<<16 }

// build fills t with the canonical Huffman code of lens (RFC 1951 3.2.2)
// and returns it. As zlib and Go's compress/flate do, it admits two codes
// that leave bit patterns unused: none at all (a block of literals has no
// distances) and a single code of one bit; an unused pattern is an entry
// of 0, an error when read.
//
// A trace of 1 GB has some 20 thousand blocks, each with its own code, so
// this is not free: the primary table is filled by doubling (the entries
// of codes up to length l are laid out in its first 2^l slots, which are
// then copied on), as libdeflate does, rather than one strided store per
// slot.
func build(t []uint32, lens []uint8, primary uint, entry symbolEntry) ([]uint32, error) {
	var count [maxCodeLen + 1]int
	maxLen := 0
	for _, l := range lens {
		count[l]++
		maxLen = max(maxLen, int(l))
	}
	count[0] = 0
	left := 1
	for l := 1; l <= maxCodeLen; l++ {
		left = left<<1 - count[l]
		if left < 0 {
			return t, errOversubscribed
		}
	}
	if left > 0 && maxLen > 1 {
		return t, errIncomplete
	}
	size := 1 << primary
	if left > 0 {
		// Empty, or one code of one bit: the unused half stays 0.
		t = append(t[:0], make([]uint32, size)...)
		for sym, l := range lens {
			if l == 1 {
				e := entry(sym)
				if e != 0 {
					e |= 1
				}
				for i := 0; i < size; i += 2 {
					t[i] = e
				}
			}
		}
		return t, nil
	}
	// Symbols in code order: by length, then by symbol.
	var at [maxCodeLen + 2]int
	for l := 1; l <= maxCodeLen; l++ {
		at[l+1] = at[l] + count[l]
	}
	var sorted [numLitLen]uint16
	for sym, l := range lens {
		if l != 0 {
			sorted[at[l]] = uint16(sym)
			at[l]++
		}
	}
	entryOf := func(sym uint16, l int) uint32 {
		e := entry(int(sym))
		if e != 0 { // a symbol the alphabet never uses stays invalid
			e |= uint32(l)
		}
		return e
	}
	t = slices.Grow(t[:0], size)[:size]
	code, pos, filled := 0, 0, 1
	for l := 1; l <= int(primary); l++ {
		copy(t[filled:2*filled], t[:filled])
		filled *= 2
		for range count[l] {
			t[bits.Reverse16(uint16(code))>>(16-l)] = entryOf(sorted[pos], l)
			code++
			pos++
		}
		code <<= 1
	}
	// Longer codes: those that share their first primary bits come one
	// after another in code order, and share a subtable. The slots of
	// those first bits hold leftovers of the doubling until their link is
	// written.
	sub := maxLen - int(primary) // index bits of each subtable
	head := -1
	for l := int(primary) + 1; l <= maxLen; l++ {
		for range count[l] {
			rev := int(bits.Reverse16(uint16(code)) >> (16 - l))
			if h := rev & (size - 1); h != head {
				head = h
				t[head] = flagLink | uint32(sub)<<8 | uint32(len(t))<<16
				t = append(t, make([]uint32, 1<<sub)...)
			}
			e, off := entryOf(sorted[pos], l), int(t[head]>>16)
			for i := rev >> primary; i < 1<<sub; i += 1 << (l - int(primary)) {
				t[off+i] = e
			}
			code++
			pos++
		}
		code <<= 1
	}
	return t, nil
}
