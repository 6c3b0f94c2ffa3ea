// Package inflate reads gzip streams (RFC 1952, deflate of RFC 1951)
// writing the output straight into the caller's buffer.
//
// Why not compress/flate or klauspost's: both inflate into a 32 KB window
// of their own and copy it out on each Read. A trace is read on one
// goroutine and scanned on another, so every byte is copied once more
// than needed; measured on 2 GB traces that copy was a fifth of the
// inflating goroutine's time, and that goroutine sets the pace. Here a
// match that reaches before the caller's buffer is served from a copy of
// the last 32 KB of output, kept between Reads; every other byte is
// written once, where the caller wants it.
package inflate

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
)

var (
	// ErrChecksum: a member's CRC-32 or length does not match its data.
	ErrChecksum = errors.New("gzip: invalid checksum")
	// ErrHeader: the data is not a gzip member where one should begin.
	ErrHeader = errors.New("gzip: invalid header")
	// ErrCorrupt: the deflate data is not valid.
	ErrCorrupt = errors.New("inflate: corrupt deflate data")
)

const (
	window  = 32 << 10
	inSize  = 128 << 10
	inSlack = 8 // bytes kept before the unread input when it is refilled (see giveBack)
	// fastRoom is what the fast loop needs ahead of it: a match of 258
	// bytes copied 16 bytes at a time, which may write 15 past its end.
	fastRoom = 258 + 16
	// fastInput: a symbol pair (literal/length and distance with their
	// extra bits) takes at most 48 bits, and a refill reads 8 bytes.
	fastInput = 16
)

type state uint8

const (
	stMember     state = iota // a gzip member header is next
	stBlock                   // a block header is next
	stHuffman                 // inside a Huffman-coded block
	stStored                  // inside a stored block
	stTrailer                 // the member's trailer is next
	stNextMember              // after a trailer: another member, or the end
	stDone
)

// Reader decompresses a gzip stream of one or more members.
type Reader struct {
	r     io.Reader
	rerr  error // the error that ended r, once seen
	in    []byte
	ip    int   // next unread input byte
	taken int64 // bytes read from r
	zeros int   // zero bytes fed into bitbuf past the end of input

	bitbuf   uint64
	bitsleft uint

	hist []byte // the last output bytes before the current Read's buffer, at most window

	st        state
	final     bool
	stored    int // bytes left in a stored block
	matchLen  int // a match cut short by the end of the caller's buffer
	matchDist int
	lit, dist []uint32
	litFixed  bool // lit and dist hold the fixed code
	clen      []uint32

	crc       uint32
	memberOut int64 // this member's output so far
	members   int
	memberAt  [2]int64 // where the member being begun starts: output, input
	out       int64    // output bytes, all members
	err       error

	// SecondMember is called when a second member begins, with its
	// offsets in the output and in the input.
	SecondMember func(out, in int64)
}

// NewReader returns a Reader of r, having read the first member's header
// (an error says r is not gzip, or ends in its header).
func NewReader(r io.Reader) (*Reader, error) {
	z := &Reader{
		r:    r,
		in:   make([]byte, 0, inSize),
		hist: make([]byte, 0, window),
	}
	z.step(nil, 0)
	if z.err != nil {
		return nil, z.err
	}
	return z, nil
}

// InputOffset is the input consumed so far, in bytes.
func (z *Reader) InputOffset() int64 {
	return z.taken - int64(len(z.in)-z.ip) - int64(z.bitsleft>>3) + int64(z.zeros)
}

// Read decompresses into p. It fills p unless the stream ends first; as
// io.Reader allows, it may write in p past the n it returns (a match is
// copied in 16-byte words).
func (z *Reader) Read(p []byte) (int, error) {
	if z.err != nil {
		return 0, z.err
	}
	op := 0
	for op < len(p) && z.err == nil {
		next := z.step(p, op)
		if next > op {
			z.crc = crc32.Update(z.crc, crc32.IEEETable, p[op:next])
			z.memberOut += int64(next - op)
			op = next
		}
	}
	z.keep(p[:op])
	z.out += int64(op)
	if op > 0 && z.err == io.EOF {
		return op, nil
	}
	return op, z.err
}

// step advances by one state (a block, a header, part of a block) and
// returns the new output position.
func (z *Reader) step(p []byte, op int) int {
	if z.matchLen > 0 {
		n := z.copyMatch(p, op, z.matchDist, z.matchLen)
		z.matchLen -= n
		return op + n
	}
	switch z.st {
	case stMember:
		z.err = z.header()
		if z.err == nil {
			z.st = stBlock
			z.crc, z.memberOut = 0, 0
			if z.members == 1 && z.SecondMember != nil {
				z.SecondMember(z.memberAt[0], z.memberAt[1])
			}
		}
	case stBlock:
		if z.final {
			z.st = stTrailer
			return op
		}
		z.err = z.blockHeader()
	case stHuffman:
		op = z.huffman(p, op)
	case stStored:
		op += z.storedCopy(p[op:])
	case stTrailer:
		z.err = z.trailer()
		z.st = stNextMember
	case stNextMember:
		more, err := z.skipZeros()
		switch {
		case err != nil:
			z.err = err
		case !more:
			z.err = io.EOF
			z.st = stDone
		default:
			z.members++
			z.memberAt = [2]int64{z.out + int64(op), z.InputOffset()}
			z.final = false
			z.st = stMember
		}
	case stDone:
		z.err = io.EOF
	}
	return op
}

// keep saves the end of the output written into p, for matches that reach
// before the next Read's buffer.
func (z *Reader) keep(out []byte) {
	if len(out) >= window {
		z.hist = append(z.hist[:0], out[len(out)-window:]...)
		return
	}
	if drop := len(z.hist) + len(out) - window; drop > 0 {
		n := copy(z.hist, z.hist[drop:])
		z.hist = z.hist[:n]
	}
	z.hist = append(z.hist, out...)
}

// copyMatch writes up to length bytes of a match at dist into p at op,
// as many as p has room for, and returns how many. Its start may lie in
// the previous output (hist).
func (z *Reader) copyMatch(p []byte, op, dist, length int) int {
	length = min(length, len(p)-op)
	n := 0
	if dist > op {
		from := len(z.hist) - (dist - op)
		n = copy(p[op:op+length], z.hist[from:])
	}
	for n < length {
		n += copy(p[op+n:op+length], p[op+n-dist:op+n])
	}
	return n
}

// fill reads more input, keeping inSlack bytes before the unread ones. It
// reports whether any came.
func (z *Reader) fill() bool {
	if z.rerr != nil {
		return false
	}
	keep := max(z.ip-inSlack, 0)
	n := copy(z.in[:cap(z.in)], z.in[keep:])
	z.in = z.in[:n]
	z.ip -= keep
	for {
		k, err := z.r.Read(z.in[len(z.in):cap(z.in)])
		z.in = z.in[:len(z.in)+k]
		z.taken += int64(k)
		if err != nil {
			z.rerr = err
			return k > 0
		}
		if k > 0 {
			return true
		}
	}
}

// inputErr is the error of input that ended early.
func (z *Reader) inputErr() error {
	if z.rerr != nil && z.rerr != io.EOF {
		return z.rerr
	}
	return io.ErrUnexpectedEOF
}

// need makes bitbuf hold at least n bits (n ≤ 57), past the end of input
// with zeros; bitsValid says whether the bits consumed were real.
func (z *Reader) need(n uint) {
	for z.bitsleft < n {
		if z.ip == len(z.in) && !z.fill() {
			z.zeros++
			z.bitsleft += 8
			continue
		}
		z.bitbuf |= uint64(z.in[z.ip]) << z.bitsleft
		z.ip++
		z.bitsleft += 8
	}
}

// bitsValid reports whether the bits consumed so far were all input.
func (z *Reader) bitsValid() bool { return int(z.bitsleft) >= 8*z.zeros }

func (z *Reader) bits(n uint) uint32 {
	z.need(n)
	v := uint32(z.bitbuf & (1<<n - 1))
	z.bitbuf >>= n
	z.bitsleft -= n
	return v
}

// giveBack returns the whole bytes in bitbuf to the input, after dropping
// the bits before the next byte boundary.
func (z *Reader) giveBack() error {
	z.bitsleft -= z.bitsleft & 7
	back := int(z.bitsleft>>3) - z.zeros
	if back < 0 {
		return z.inputErr()
	}
	z.ip -= back
	z.bitbuf, z.bitsleft, z.zeros = 0, 0, 0
	return nil
}

// readByte reads one input byte (bitbuf must be empty).
func (z *Reader) readByte() (byte, error) {
	if z.ip == len(z.in) && !z.fill() {
		return 0, z.inputErr()
	}
	b := z.in[z.ip]
	z.ip++
	return b, nil
}

// readFull fills b with input bytes (bitbuf must be empty).
func (z *Reader) readFull(b []byte) error {
	for i := range b {
		c, err := z.readByte()
		if err != nil {
			return err
		}
		b[i] = c
	}
	return nil
}

// moreInput reports whether input remains after a member.
func (z *Reader) moreInput() (bool, error) {
	if z.ip < len(z.in) || z.fill() {
		return true, nil
	}
	if z.rerr != io.EOF {
		return false, z.rerr
	}
	return false, nil
}

// skipZeros skips the zero bytes after a member (padding to a block
// size, as tape and some writers leave) and reports whether a member
// follows. Python's gzip module skips them the same way, between members
// and at the end; a stray non-zero byte is still not a header.
func (z *Reader) skipZeros() (bool, error) {
	for {
		more, err := z.moreInput()
		if !more || err != nil {
			return more, err
		}
		for z.ip < len(z.in) && z.in[z.ip] == 0 {
			z.ip++
		}
		if z.ip < len(z.in) {
			return true, nil
		}
	}
}

// header reads a gzip member header (RFC 1952 2.3).
func (z *Reader) header() error {
	var h [10]byte
	if err := z.readFull(h[:]); err != nil {
		return err // a few stray bytes after a member: unexpected EOF
	}
	if h[0] != 0x1f || h[1] != 0x8b || h[2] != 8 {
		return ErrHeader
	}
	flg := h[3]
	if flg&0xe0 != 0 {
		return ErrHeader
	}
	// With FHCRC the header's bytes are kept for their CRC: the standard
	// library, zlib and klauspost's reader check it, and a header that
	// fails it says the stream is damaged.
	var seen []byte
	if flg&2 != 0 {
		seen = append(seen, h[:]...)
	}
	next := func() (byte, error) {
		b, err := z.readByte()
		if flg&2 != 0 {
			seen = append(seen, b)
		}
		return b, err
	}
	if flg&4 != 0 { // FEXTRA
		lo, err := next()
		if err != nil {
			return err
		}
		hi, err := next()
		if err != nil {
			return err
		}
		for range int(lo) | int(hi)<<8 {
			if _, err := next(); err != nil {
				return err
			}
		}
	}
	for _, f := range []byte{8, 16} { // FNAME, FCOMMENT: zero-terminated
		if flg&f == 0 {
			continue
		}
		for {
			b, err := next()
			if err != nil {
				return err
			}
			if b == 0 {
				break
			}
		}
	}
	if flg&2 != 0 { // FHCRC: the low 16 bits of the header's CRC-32
		var c [2]byte
		if err := z.readFull(c[:]); err != nil {
			return err
		}
		if binary.LittleEndian.Uint16(c[:]) != uint16(crc32.ChecksumIEEE(seen)) {
			return ErrHeader
		}
	}
	return nil
}

// trailer checks a member's CRC-32 and size.
func (z *Reader) trailer() error {
	if err := z.giveBack(); err != nil {
		return err
	}
	var t [8]byte
	if err := z.readFull(t[:]); err != nil {
		return err
	}
	if binary.LittleEndian.Uint32(t[:4]) != z.crc || binary.LittleEndian.Uint32(t[4:]) != uint32(z.memberOut) {
		return ErrChecksum
	}
	return nil
}

// blockHeader reads a block's header and, for a Huffman block, its code.
func (z *Reader) blockHeader() error {
	h := z.bits(3)
	z.final = h&1 == 1
	switch h >> 1 {
	case 0:
		if err := z.giveBack(); err != nil {
			return err
		}
		var b [4]byte
		if err := z.readFull(b[:]); err != nil {
			return err
		}
		n := binary.LittleEndian.Uint16(b[:2])
		if n != ^binary.LittleEndian.Uint16(b[2:]) {
			return fmt.Errorf("%w: stored block length and its complement disagree", ErrCorrupt)
		}
		z.stored = int(n)
		z.st = stStored
	case 1:
		if !z.litFixed {
			var lens [numLitLen + numDist]uint8
			for i := range lens {
				switch {
				case i < 144:
					lens[i] = 8
				case i < 256:
					lens[i] = 9
				case i < 280:
					lens[i] = 7
				case i < numLitLen:
					lens[i] = 8
				default:
					lens[i] = 5
				}
			}
			if err := z.tables(lens[:numLitLen], lens[numLitLen:]); err != nil {
				return err
			}
			z.litFixed = true
		}
		z.st = stHuffman
	case 2:
		if err := z.dynamic(); err != nil {
			return err
		}
		z.litFixed = false
		z.st = stHuffman
	default:
		return fmt.Errorf("%w: reserved block type", ErrCorrupt)
	}
	if !z.bitsValid() {
		return z.inputErr()
	}
	return nil
}

func (z *Reader) tables(lit, dist []uint8) error {
	var err error
	if z.lit, err = build(z.lit, lit, litBits, litLenEntry); err != nil {
		return fmt.Errorf("%w: literal/length code: %w", ErrCorrupt, err)
	}
	if z.dist, err = build(z.dist, dist, distBits, distEntry); err != nil {
		return fmt.Errorf("%w: distance code: %w", ErrCorrupt, err)
	}
	return nil
}

// dynamic reads a dynamic block's code (RFC 1951 3.2.7).
func (z *Reader) dynamic() error {
	nlit := int(z.bits(5)) + 257
	ndist := int(z.bits(5)) + 1
	nclen := int(z.bits(4)) + 4
	if nlit > 286 || ndist > 30 {
		return fmt.Errorf("%w: too many length or distance codes", ErrCorrupt)
	}
	var clens [numClen]uint8
	for i := range nclen {
		clens[clenOrder[i]] = uint8(z.bits(3))
	}
	if !z.bitsValid() {
		return z.inputErr()
	}
	var err error
	if z.clen, err = build(z.clen, clens[:], clenBits, clenEntry); err != nil {
		return fmt.Errorf("%w: code-length code: %w", ErrCorrupt, err)
	}
	var lens [numLitLen + numDist]uint8
	for i := 0; i < nlit+ndist; {
		z.need(clenBits + 7)
		e, err := z.symbol(z.clen, clenBits, "code-length")
		if err != nil {
			return err
		}
		sym := e >> 16
		if sym < 16 {
			lens[i] = uint8(sym)
			i++
			continue
		}
		var rep int
		var v uint8
		switch sym {
		case 16:
			if i == 0 {
				return fmt.Errorf("%w: repeat with no previous length", ErrCorrupt)
			}
			v, rep = lens[i-1], 3+int(z.bits(2))
		case 17:
			rep = 3 + int(z.bits(3))
		default:
			rep = 11 + int(z.bits(7))
		}
		if i+rep > nlit+ndist {
			if !z.bitsValid() {
				return z.inputErr()
			}
			return fmt.Errorf("%w: code lengths overrun", ErrCorrupt)
		}
		for range rep {
			lens[i] = v
			i++
		}
	}
	if !z.bitsValid() {
		return z.inputErr()
	}
	if lens[256] == 0 {
		return fmt.Errorf("%w: no end-of-block code", ErrCorrupt)
	}
	return z.tables(lens[:nlit], lens[nlit:nlit+ndist])
}

// storedCopy copies a stored block's bytes into p.
func (z *Reader) storedCopy(p []byte) int {
	n := 0
	for n < len(p) && z.stored > 0 {
		if z.ip == len(z.in) && !z.fill() {
			z.err = z.inputErr()
			return n
		}
		k := copy(p[n:min(len(p), n+z.stored)], z.in[z.ip:])
		z.ip += k
		z.stored -= k
		n += k
	}
	if z.stored == 0 {
		z.st = stBlock
	}
	return n
}
