package inflate

import (
	"bufio"
	"bytes"
	stdgzip "compress/gzip"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math/bits"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"testing/iotest"

	kgzip "github.com/klauspost/compress/gzip"

	"github.com/profile-model/profile-model/internal/corpus"
)

// The tests here hold the reader to the standard library's on streams
// from both compressors at every level, delivered and read in pieces of
// every size, and on damaged streams: a decoding bug would corrupt every
// analysis silently, so each path is driven on purpose.

// pieceReader hands out its input in pieces of 1..max bytes; with
// eofWithData the last piece comes with io.EOF, as some readers do.
type pieceReader struct {
	data        []byte
	rng         *rand.Rand
	max         int
	eofWithData bool
}

func (c *pieceReader) Read(p []byte) (int, error) {
	if len(c.data) == 0 {
		return 0, io.EOF
	}
	if len(p) == 0 {
		return 0, nil
	}
	n := copy(p, c.data[:min(len(c.data), 1+c.rng.IntN(c.max))])
	c.data = c.data[n:]
	if c.eofWithData && len(c.data) == 0 {
		return n, io.EOF
	}
	return n, nil
}

// readRandom reads r with a buffer of a random size (0..max) on each call,
// scribbling over the buffer first so that no byte a Read leaves alone
// can pass for output. It checks the Read contract the callers rely on:
// a Read fills its buffer unless the stream ends (then the next Read
// returns 0, io.EOF), and never returns more than asked.
func readRandom(t testing.TB, r io.Reader, rng *rand.Rand, max int) ([]byte, error) {
	var out []byte
	err := readRandomTo(t, r, rng, max, func(b []byte) { out = append(out, b...) })
	return out, err
}

// readRandomTo is readRandom handing each Read's bytes to sink.
func readRandomTo(t testing.TB, r io.Reader, rng *rand.Rand, max int, sink func([]byte)) error {
	buf := make([]byte, max)
	short := false
	for {
		k := rng.IntN(max + 1)
		v := byte(rng.Uint32())
		for i := range buf[:k] {
			buf[i] = v
		}
		n, err := r.Read(buf[:k])
		if n > k {
			t.Fatalf("Read of %d bytes returned %d", k, n)
		}
		if short && k > 0 && (n != 0 || err != io.EOF) {
			t.Fatalf("a short Read with no error, then %d bytes and %v: want 0 and io.EOF", n, err)
		}
		if err == nil && n < k {
			short = true
		}
		sink(buf[:n])
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// stdDecode is the standard library's reading of z, all members.
//
// It reads member by member and skips the zero bytes after each one, as
// Python's gzip module does and this package does (the standard library's
// multistream reader calls them a bad header).
func stdDecode(z []byte) ([]byte, error) {
	br := bufio.NewReader(bytes.NewReader(z))
	var out []byte
	for first := true; ; first = false {
		if !first {
			b, err := br.ReadByte()
			for err == nil && b == 0 {
				b, err = br.ReadByte()
			}
			if err == io.EOF {
				return out, nil
			}
			if err != nil {
				return out, err
			}
			_ = br.UnreadByte()
		}
		r, err := stdgzip.NewReader(br)
		if err != nil {
			return out, err
		}
		r.Multistream(false)
		data, err := io.ReadAll(r)
		out = append(out, data...)
		if err != nil {
			return out, err
		}
	}
}

// decodeRandom reads z with this package, the input in random pieces and
// the output into random buffers.
func decodeRandom(t testing.TB, z []byte, rng *rand.Rand) ([]byte, error) {
	in := &pieceReader{data: z, rng: rng, max: 1 + rng.IntN(64<<10), eofWithData: rng.IntN(2) == 0}
	if rng.IntN(4) == 0 {
		in.max = 1 + rng.IntN(40) // tiny pieces: the careful loop throughout
	}
	return readRandom(t, newReader(in), rng, 1+rng.IntN(min(100<<10, 8*len(z)+100)))
}

// sameAsStd checks that this package and the standard library both fail
// on z, or both succeed with the same output; it returns this package's
// error.
func sameAsStd(t testing.TB, name string, z []byte, rng *rand.Rand) error {
	t.Helper()
	want, wantErr := stdDecode(z)
	got, err := decodeRandom(t, z, rng)
	if (err == nil) != (wantErr == nil) {
		t.Fatalf("%s: error %v, standard library's %v", name, err, wantErr)
	}
	if err == nil && !bytes.Equal(got, want) {
		t.Fatalf("%s: output differs from the standard library's (%d bytes against %d)", name, len(got), len(want))
	}
	return err
}

// compressors at every level they have, with their Flush.
var compressors = []struct {
	name   string
	levels []int
	open   func(w io.Writer, level int) (io.Writer, func() error, func() error, error)
}{
	{"stdlib", []int{-2, -1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, func(w io.Writer, level int) (io.Writer, func() error, func() error, error) {
		z, err := stdgzip.NewWriterLevel(w, level)
		if err != nil {
			return nil, nil, nil, err
		}
		return z, z.Flush, z.Close, nil
	}},
	{"klauspost", []int{-3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, func(w io.Writer, level int) (io.Writer, func() error, func() error, error) {
		z, err := kgzip.NewWriterLevel(w, level)
		if err != nil {
			return nil, nil, nil, err
		}
		return z, z.Flush, z.Close, nil
	}},
}

// compress writes data as one member; flushEvery > 0 flushes after
// writes of 1..flushEvery bytes, twice in a row now and then (an empty
// stored block after another).
func compress(t testing.TB, c int, level int, data []byte, flushEvery int, rng *rand.Rand) []byte {
	var b bytes.Buffer
	w, flush, closeW, err := compressors[c].open(&b, level)
	if err != nil {
		t.Fatal(err)
	}
	for len(data) > 0 {
		n := len(data)
		if flushEvery > 0 {
			n = min(n, 1+rng.IntN(flushEvery))
		}
		if _, err := w.Write(data[:n]); err != nil {
			t.Fatal(err)
		}
		data = data[n:]
		if flushEvery > 0 {
			for range 1 + rng.IntN(2) {
				if err := flush(); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	if err := closeW(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestEveryLevel: both compressors at every level, with and without
// frequent flushes, read in random pieces into random buffers.
func TestEveryLevel(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	sizes := []int{0, 1, 2, 257, 5000, 70 << 10, 300 << 10}
	for c := range compressors {
		for _, level := range compressors[c].levels {
			for _, size := range sizes {
				data := corpusLike(rng, size)
				if size == 5000 {
					data = bytes.Repeat([]byte{'x'}, size) // a long run of distance 1
				}
				for _, flushEvery := range []int{0, 1 + rng.IntN(3000)} {
					if size > 100<<10 && flushEvery > 0 {
						flushEvery *= 30 // fewer, bigger pieces: keeps the test quick
					}
					z := compress(t, c, level, data, flushEvery, rng)
					for try := range 2 {
						name := fmt.Sprintf("%s level %d size %d flush %d try %d", compressors[c].name, level, size, flushEvery, try)
						got, err := decodeRandom(t, z, rng)
						if err != nil {
							t.Fatalf("%s: %v", name, err)
						}
						if !bytes.Equal(got, data) {
							t.Fatalf("%s: output differs from the input (%d bytes against %d)", name, len(got), len(data))
						}
					}
				}
			}
		}
	}
}

// TestBigStoredBlocks: stored blocks of up to 64 KB, read into buffers
// smaller and larger than a block, the input in pieces that cut the
// blocks' headers.
func TestBigStoredBlocks(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	data := make([]byte, 1<<20+3)
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	for c := range compressors {
		z := compress(t, c, 0, data, 0, rng)
		for _, bufSize := range []int{1, 1000, 65535, 65536, 65537, 200 << 10, 2 << 20} {
			for _, piece := range []int{1 << 20, 7, 65536 + 5} {
				if bufSize == 1 && piece == 7 {
					continue // a byte out per Read and 7 in: slow, covered by the others
				}
				in := &pieceReader{data: z, rng: rng, max: piece}
				got, err := readAll(newReader(in), bufSize)
				if err != nil || !bytes.Equal(got, data) {
					t.Fatalf("%s, buffer %d, input pieces up to %d: %v (equal %v)", compressors[c].name, bufSize, piece, err, bytes.Equal(got, data))
				}
			}
		}
	}
}

// TestManyMembers: members of every kind back to back, some of them
// empty; the output is their data in order, and SecondMember is told
// once, where the second member begins.
func TestManyMembers(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 16))
	var z, want []byte
	var secondOut, secondIn int64 = -1, -1
	for m := range 60 {
		size := []int{0, 0, 1, 100, 3000, 40 << 10}[rng.IntN(6)]
		data := corpusLike(rng, size)
		c := rng.IntN(len(compressors))
		level := compressors[c].levels[rng.IntN(len(compressors[c].levels))]
		if m == 1 {
			secondOut, secondIn = int64(len(want)), int64(len(z))
		}
		z = append(z, compress(t, c, level, data, []int{0, 500}[rng.IntN(2)], rng)...)
		want = append(want, data...)
	}
	for try := range 20 {
		in := &pieceReader{data: z, rng: rng, max: 1 + rng.IntN(5000), eofWithData: try%2 == 0}
		r, err := NewReader(in)
		if err != nil {
			t.Fatal(err)
		}
		calls := 0
		r.SecondMember = func(out, in int64) {
			calls++
			if out != secondOut || in != secondIn {
				t.Errorf("second member reported at output %d, input %d; want %d, %d", out, in, secondOut, secondIn)
			}
		}
		got, err := readRandom(t, r, rng, 1+rng.IntN(70<<10))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("60 members: output differs (%d bytes against %d)", len(got), len(want))
		}
		if calls != 1 {
			t.Fatalf("SecondMember called %d times, want 1", calls)
		}
		if off := r.InputOffset(); off != int64(len(z)) {
			t.Fatalf("InputOffset at the end %d, want %d", off, len(z))
		}
	}

	// A checksum is per member: the same data in two members, the second
	// with the first's trailer, fails.
	a := compress(t, 0, 6, []byte("abc"), 0, rng)
	b := compress(t, 0, 6, []byte("abcd"), 0, rng)
	bad := append(append([]byte{}, a...), b[:len(b)-8]...)
	bad = append(bad, a[len(a)-8:]...)
	if _, err := readAll(newReader(bytes.NewReader(bad)), 100); !errors.Is(err, ErrChecksum) {
		t.Fatalf("second member with the first's trailer: %v, want ErrChecksum", err)
	}
}

// withHeader makes a member of data with the given optional header
// fields (flg's FEXTRA, FNAME, FCOMMENT, FHCRC bits), the header CRC
// right or wrong.
func withHeader(t testing.TB, data []byte, flg byte, badHCRC bool) []byte {
	raw := compress(t, 0, 6, data, 0, nil) // a member with no optional fields
	h := []byte{0x1f, 0x8b, 8, flg, 1, 2, 3, 4, 0, 3}
	if flg&4 != 0 {
		extra := []byte("AB\x04\x00xyzw")
		h = binary.LittleEndian.AppendUint16(h, uint16(len(extra)))
		h = append(h, extra...)
	}
	if flg&8 != 0 {
		h = append(h, "trace.json\x00"...)
	}
	if flg&16 != 0 {
		h = append(h, "a comment\x00"...)
	}
	if flg&2 != 0 {
		sum := uint16(crc32.ChecksumIEEE(h))
		if badHCRC {
			sum ^= 0x100
		}
		h = binary.LittleEndian.AppendUint16(h, sum)
	}
	return append(h, raw[10:]...)
}

// TestHeaders: every combination of the optional header fields, with the
// header CRC right and wrong, alone and as a second member.
func TestHeaders(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 18))
	data := corpusLike(rng, 2000)
	for flg := byte(0); flg < 32; flg++ {
		for _, bad := range []bool{false, true} {
			if bad && flg&2 == 0 {
				continue
			}
			z := withHeader(t, data, flg, bad)
			for _, stream := range [][]byte{z, append(withHeader(t, data, 0, false), z...)} {
				name := fmt.Sprintf("flags %#x, bad header CRC %v, %d bytes", flg, bad, len(stream))
				err := sameAsStd(t, name, stream, rng)
				if bad && !errors.Is(err, ErrHeader) {
					t.Fatalf("%s: %v, want ErrHeader", name, err)
				}
			}
		}
	}
	// The standard library's writer sets its fields itself.
	var b bytes.Buffer
	w := stdgzip.NewWriter(&b)
	w.Extra, w.Name, w.Comment = []byte("extra"), "name", "comment"
	w.Write(data)
	w.Close()
	if err := sameAsStd(t, "Extra, Name and Comment", b.Bytes(), rng); err != nil {
		t.Fatal(err)
	}
}

// smallStreams are short streams of every kind, to be cut and damaged
// at every byte.
func smallStreams(t testing.TB, rng *rand.Rand) [][]byte {
	var out [][]byte
	for c := range compressors {
		for _, level := range []int{-2, 0, 1, 6, 9} {
			out = append(out, compress(t, c, level, corpusLike(rng, 400), 0, rng))
		}
	}
	out = append(out,
		compress(t, 0, 6, corpusLike(rng, 300), 50, rng), // sync flushes
		compress(t, 0, 6, nil, 0, rng),                   // empty
		withHeader(t, []byte("some data, some data"), 2|4|8|16, false),
		append(compress(t, 1, 1, []byte("first member "), 0, rng), compress(t, 0, 9, []byte("second member"), 0, rng)...),
	)
	return out
}

// TestCutEverywhere: a stream cut at any byte fails, as it does in the
// standard library, and never looks complete.
func TestCutEverywhere(t *testing.T) {
	rng := rand.New(rand.NewPCG(19, 20))
	for i, z := range smallStreams(t, rng) {
		starts := flagBytes(t, z)
		for cut := range len(z) {
			err := sameAsStd(t, fmt.Sprintf("stream %d cut at %d of %d", i, cut, len(z)), z[:cut], rng)
			if err == nil && !starts[cut+3] { // a cut between members leaves a whole stream
				t.Fatalf("stream %d cut at %d of %d: no error", i, cut, len(z))
			}
		}
	}
}

// flagBytes lists where the members' FLG bytes are in z, which must be a
// well-formed stream.
func flagBytes(t testing.TB, z []byte) map[int]bool {
	at := map[int]bool{}
	for off := 0; off < len(z); {
		at[off+3] = true
		r, err := NewReader(bytes.NewReader(z[off:]))
		if err != nil {
			t.Fatal(err)
		}
		var next int64 = -1
		r.SecondMember = func(_, in int64) { next = in }
		if _, err := io.ReadAll(r); err != nil {
			t.Fatal(err)
		}
		if next < 0 {
			break
		}
		off += int(next)
	}
	return at
}

// TestFlipEveryBit: a stream with any one bit flipped fails in this
// package exactly when it fails in the standard library, and otherwise
// reads the same. The one difference on purpose: a reserved FLG bit,
// which RFC 1952 (2.3.1.2) says must be an error and the standard
// library ignores.
func TestFlipEveryBit(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	// Every bit of every stream takes some 5 s: by default one bit a
	// byte, chosen at random; PROFILE_MODEL_INFLATE_LONG=1 flips them all.
	all := os.Getenv("PROFILE_MODEL_INFLATE_LONG") != ""
	for i, z := range smallStreams(t, rng) {
		flags := flagBytes(t, z)
		for at := range len(z) {
			for bit := range 8 {
				if !all && bit != int(uint(at)*7+uint(i))%8 {
					continue
				}
				bad := append([]byte{}, z...)
				bad[at] ^= 1 << bit
				name := fmt.Sprintf("stream %d, bit %d of byte %d flipped", i, bit, at)
				if flags[at] && bit >= 5 {
					if _, err := decodeRandom(t, bad, rng); !errors.Is(err, ErrHeader) || !reservedFlag(bad) {
						t.Fatalf("%s: %v, want ErrHeader (and reservedFlag to see why)", name, err)
					}
					continue
				}
				sameAsStd(t, name, bad, rng)
			}
		}
	}
}

// TestReaderErrors: an error of the input comes out as itself, however
// the input ends; input that ends early is io.ErrUnexpectedEOF.
func TestReaderErrors(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 24))
	data := corpusLike(rng, 100<<10)
	z := compress(t, 0, 6, data, 0, rng)
	for _, wrap := range []func(io.Reader) io.Reader{iotest.OneByteReader, iotest.HalfReader, iotest.DataErrReader} {
		got, err := readAll(newReader(wrap(bytes.NewReader(z))), 3000)
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("%v (equal %v)", err, bytes.Equal(got, data))
		}
	}
	boom := errors.New("boom")
	// The whole stream then an error counts too: it may hide a member,
	// and the standard library reports it as well.
	for _, cut := range []int{5, 20, len(z) / 2, len(z) - 3, len(z)} {
		r := io.MultiReader(bytes.NewReader(z[:cut]), iotest.ErrReader(boom))
		if _, err := readAll(newReader(r), 3000); !errors.Is(err, boom) {
			t.Fatalf("input failing after %d bytes: %v, want its error", cut, err)
		}
		rs, err := stdgzip.NewReader(io.MultiReader(bytes.NewReader(z[:cut]), iotest.ErrReader(boom)))
		if err == nil {
			_, err = io.ReadAll(rs)
		}
		if !errors.Is(err, boom) && cut >= 10 {
			t.Fatalf("standard library, input failing after %d bytes: %v", cut, err)
		}
	}
}

// bitWriter writes deflate's bits, least significant first.
type bitWriter struct {
	out  []byte
	acc  uint64
	nacc uint
}

func (w *bitWriter) bits(v uint64, n uint) {
	w.acc |= v << w.nacc
	w.nacc += n
	for w.nacc >= 8 {
		w.out = append(w.out, byte(w.acc))
		w.acc >>= 8
		w.nacc -= 8
	}
}

// code writes a Huffman code, most significant bit first.
func (w *bitWriter) code(c uint64, n uint) {
	w.bits(uint64(bits.Reverse16(uint16(c))>>(16-n)), n)
}

func (w *bitWriter) bytes() []byte {
	if w.nacc > 0 {
		return append(w.out, byte(w.acc))
	}
	return w.out
}

// member wraps raw deflate data in a gzip header and the trailer of want.
func member(deflate, want []byte) []byte {
	z := append([]byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 255}, deflate...)
	z = binary.LittleEndian.AppendUint32(z, crc32.ChecksumIEEE(want))
	return binary.LittleEndian.AppendUint32(z, uint32(len(want)))
}

// fixedLit writes a literal/length symbol of the fixed code.
func (w *bitWriter) fixedLit(sym int) {
	switch {
	case sym < 144:
		w.code(uint64(0x30+sym), 8)
	case sym < 256:
		w.code(uint64(0x190+sym-144), 9)
	case sym < 280:
		w.code(uint64(sym-256), 7)
	default:
		w.code(uint64(0xc0+sym-280), 8)
	}
}

// TestHandMadeStreams: codes and symbols compressors do not write but a
// decoder must judge as the standard library does.
func TestHandMadeStreams(t *testing.T) {
	rng := rand.New(rand.NewPCG(25, 26))
	type stream struct {
		name string
		z    []byte
		ok   bool
	}
	var streams []stream
	fixed := func(name string, ok bool, write func(w *bitWriter), want string) {
		var w bitWriter
		w.bits(1|1<<1, 3) // final, fixed code
		write(&w)
		w.fixedLit(256)
		streams = append(streams, stream{name, member(w.bytes(), []byte(want)), ok})
	}
	fixed("literals", true, func(w *bitWriter) {
		for _, c := range []byte("abc") {
			w.fixedLit(int(c))
		}
	}, "abc")
	fixed("length 258 at distance 1", true, func(w *bitWriter) {
		w.fixedLit('a')
		w.fixedLit(285)
		w.code(0, 5) // distance 1
	}, string(bytes.Repeat([]byte("a"), 259)))
	fixed("a match before the start", false, func(w *bitWriter) {
		w.fixedLit('a')
		w.fixedLit(257)
		w.code(1, 5) // distance 2
	}, "aaaa")
	for _, sym := range []int{286, 287} {
		fixed(fmt.Sprintf("length symbol %d", sym), false, func(w *bitWriter) {
			w.fixedLit('a')
			w.fixedLit(sym)
			w.code(0, 5)
		}, "aaaa")
	}
	for _, d := range []uint64{30, 31} {
		fixed(fmt.Sprintf("distance symbol %d", d), false, func(w *bitWriter) {
			w.fixedLit('a')
			w.fixedLit(257)
			w.code(d, 5)
		}, "aaaa")
	}

	// Dynamic blocks: lit (lengths of 257+) and dist lengths sent plainly
	// (every code length as itself with a code-length code of 4 bits for
	// 0..15, complete).
	dynamic := func(name string, ok bool, lit, dist []uint8, write func(w *bitWriter, litCode, distCode map[int][2]uint64), want string) {
		var w bitWriter
		w.bits(1|2<<1, 3)
		w.bits(uint64(len(lit)-257), 5)
		w.bits(uint64(len(dist)-1), 5)
		w.bits(19-4, 4)
		for _, s := range clenOrder {
			if s < 16 {
				w.bits(4, 3)
			} else {
				w.bits(0, 3)
			}
		}
		for _, l := range append(append([]uint8{}, lit...), dist...) {
			w.code(uint64(l), 4) // 16 codes of 4 bits: code of symbol s is s
		}
		write(&w, canonical(lit), canonical(dist))
		streams = append(streams, stream{name, member(w.bytes(), []byte(want)), ok})
	}
	litLens := func(pairs ...int) []uint8 {
		l := make([]uint8, 257)
		for i := 0; i < len(pairs); i += 2 {
			for len(l) <= pairs[i] {
				l = append(l, 0)
			}
			l[pairs[i]] = uint8(pairs[i+1])
		}
		return l
	}
	put := func(w *bitWriter, c map[int][2]uint64, sym int) { w.code(c[sym][0], uint(c[sym][1])) }
	// 'a' 1 bit, EOB 2, length 3 (257) 2: complete.
	lit := litLens('a', 1, 256, 2, 257, 2)
	dynamic("one distance code of one bit", true, lit, []uint8{1}, func(w *bitWriter, lc, dc map[int][2]uint64) {
		put(w, lc, 'a')
		put(w, lc, 257)
		put(w, dc, 0)
		put(w, lc, 256)
	}, "aaaa")
	dynamic("the unused half of a one-bit distance code", false, lit, []uint8{1}, func(w *bitWriter, lc, dc map[int][2]uint64) {
		put(w, lc, 'a')
		put(w, lc, 257)
		w.bits(1, 1)
		put(w, lc, 256)
	}, "aaaa")
	dynamic("no distance codes, literals only", true, lit, []uint8{0}, func(w *bitWriter, lc, dc map[int][2]uint64) {
		put(w, lc, 'a')
		put(w, lc, 256)
	}, "a")
	dynamic("a match with no distance codes", false, lit, []uint8{0}, func(w *bitWriter, lc, dc map[int][2]uint64) {
		put(w, lc, 'a')
		put(w, lc, 257)
		w.bits(0, 8)
		put(w, lc, 256)
	}, "aaaa")
	dynamic("an incomplete literal/length code", false, litLens('a', 2, 256, 2), []uint8{0}, func(w *bitWriter, lc, dc map[int][2]uint64) {
		put(w, lc, 'a')
		put(w, lc, 256)
	}, "a")
	dynamic("an over-subscribed distance code", false, lit, []uint8{1, 1, 1}, func(w *bitWriter, lc, dc map[int][2]uint64) {
		put(w, lc, 256)
	}, "")
	// Codes of 15 bits: a's code is 1 bit, then 2, 3, ... 14, EOB and
	// 'z' 15 (complete), so both go through a subtable.
	deep := litLens('a', 1, 256, 15, 'z', 15)
	for i := range 13 {
		deep[0x80+i] = uint8(2 + i)
	}
	dynamic("15-bit codes", true, deep, []uint8{0}, func(w *bitWriter, lc, dc map[int][2]uint64) {
		for _, s := range []int{'z', 'a', 0x80 + 12, 'z'} {
			put(w, lc, s)
		}
		put(w, lc, 256)
	}, "za\x8cz")

	// Distances at the edge: all of a member's output back, and a byte
	// more; 32768 back, from Read buffers before the current one.
	lits := make([]byte, 40000)
	for i := range lits {
		lits[i] = byte(rng.Uint32())
	}
	// fixedDist writes distance d (1..32768) in the fixed code.
	fixedDist := func(w *bitWriter, d int) {
		code := 0
		for code+1 < len(distBase) && int(distBase[code+1]) <= d {
			code++
		}
		w.code(uint64(code), 5)
		w.bits(uint64(d-int(distBase[code])), uint(distExtra[code]))
	}
	back := func(n, d int) string {
		out := append([]byte{}, lits[:n]...)
		for range 258 {
			out = append(out, out[len(out)-d])
		}
		return string(out)
	}
	for _, c := range []struct {
		n, d int
		ok   bool
	}{{100, 100, true}, {100, 101, false}, {32768, 32768, true}, {40000, 32768, true}, {40000, 32767, true}, {1, 1, true}, {0, 1, false}} {
		want := ""
		if c.ok {
			want = back(c.n, c.d)
		}
		fixed(fmt.Sprintf("%d literals, then 258 bytes from %d back", c.n, c.d), c.ok, func(w *bitWriter) {
			for _, b := range lits[:c.n] {
				w.fixedLit(int(b))
			}
			w.fixedLit(285)
			fixedDist(w, c.d)
		}, want)
	}
	// A member's matches may not reach into the member before it.
	first := compress(t, 0, 6, []byte("abcdef"), 0, rng)
	for _, d := range []int{1, 2} {
		var w bitWriter
		w.bits(1|1<<1, 3)
		w.fixedLit('x')
		w.fixedLit(257)
		fixedDist(&w, d)
		w.fixedLit(256)
		streams = append(streams, stream{fmt.Sprintf("second member, distance %d", d), append(append([]byte{}, first...), member(w.bytes(), []byte("xxxx"))...), d == 1})
	}

	for _, s := range streams {
		for range 3 {
			err := sameAsStd(t, s.name, s.z, rng)
			if (err == nil) != s.ok {
				t.Fatalf("%s: error %v, want success %v", s.name, err, s.ok)
			}
		}
	}
}

// canonical gives each symbol's canonical code and length (RFC 1951
// 3.2.2), computed as the RFC says, apart from build.
func canonical(lens []uint8) map[int][2]uint64 {
	var count [16]int
	for _, l := range lens {
		count[l]++
	}
	count[0] = 0
	var next [16]uint64
	code := uint64(0)
	for l := 1; l < 16; l++ {
		code = (code + uint64(count[l-1])) << 1
		next[l] = code
	}
	c := map[int][2]uint64{}
	for s, l := range lens {
		if l != 0 {
			c[s] = [2]uint64{next[l], uint64(l)}
			next[l]++
		}
	}
	return c
}

// TestBuildAgainstRFC: tables of random complete codes with lengths up
// to 15, built over the previous table (as the reader reuses them), map
// every 15-bit pattern to the symbol the RFC's canonical code gives it.
func TestBuildAgainstRFC(t *testing.T) {
	rng := rand.New(rand.NewPCG(27, 28))
	alphabets := []struct {
		n       int
		primary uint
		entry   symbolEntry
	}{{numLitLen, litBits, litLenEntry}, {numDist, distBits, distEntry}, {numClen, clenBits, clenEntry}}
	for _, a := range alphabets {
		var table []uint32
		maxLen := 15
		if a.n == numClen {
			maxLen = 7
		}
		for try := range 300 {
			// Split leaves of a code tree at random until it has the symbols.
			leaves := []uint8{0}
			want := 2 + rng.IntN(a.n-1)
			for len(leaves) < want {
				i := rng.IntN(len(leaves))
				if try%2 == 0 { // deep, skewed trees half the time
					i = len(leaves) - 1
				}
				if int(leaves[i]) >= maxLen {
					if i = rng.IntN(len(leaves)); int(leaves[i]) >= maxLen {
						continue
					}
				}
				leaves[i]++
				leaves = append(leaves, leaves[i])
			}
			lens := make([]uint8, a.n)
			for i, s := range rng.Perm(a.n)[:len(leaves)] {
				lens[s] = leaves[i]
			}
			var err error
			table, err = build(table, lens, a.primary, a.entry)
			if err != nil {
				t.Fatalf("alphabet of %d, complete code %v: %v", a.n, lens, err)
			}
			size := 1 << a.primary
			for s, c := range canonical(lens) {
				l := uint(c[1])
				rev := uint64(bits.Reverse16(uint16(c[0])) >> (16 - l))
				for range 8 {
					pattern := rev | rng.Uint64()<<l&(1<<15-1)
					e := table[pattern&uint64(size-1)]
					if e&flagLink != 0 {
						e = table[e>>16+uint32(pattern>>a.primary)&(1<<(e>>8&31)-1)]
					}
					wantE := a.entry(s)
					if wantE != 0 {
						wantE |= uint32(l)
					}
					if e != wantE {
						t.Fatalf("alphabet of %d, lengths %v: symbol %d (code %b, %d bits) reads as entry %#x, want %#x", a.n, lens, s, c[0], l, e, wantE)
					}
				}
			}
			// Over-subscribed and incomplete versions are refused.
			longest := 0
			for s, l := range lens {
				if l > lens[longest] {
					longest = s
				}
			}
			if lens[longest] < 2 || lens[longest] >= 15 {
				continue
			}
			lens[longest]--
			if _, err := build(nil, lens, a.primary, a.entry); !errors.Is(err, errOversubscribed) {
				t.Fatalf("over-subscribed code %v: %v", lens, err)
			}
			lens[longest] += 2
			if _, err := build(nil, lens, a.primary, a.entry); !errors.Is(err, errIncomplete) {
				t.Fatalf("incomplete code %v: %v", lens, err)
			}
		}
	}
}

// FuzzRoundTrip compresses the fuzzer's data with either compressor at
// any level, flushing at places it picks, and reads it back in pieces
// and into buffers of sizes it picks.
func FuzzRoundTrip(f *testing.F) {
	rng := rand.New(rand.NewPCG(29, 30))
	f.Add(corpusLike(rng, 5000), uint8(7), uint16(0), uint64(1))
	f.Add(corpusLike(rng, 40000), uint8(20), uint16(300), uint64(2))
	f.Add(bytes.Repeat([]byte("ab"), 20000), uint8(13), uint16(17), uint64(3))
	f.Fuzz(func(t *testing.T, data []byte, which uint8, flushEvery uint16, seed uint64) {
		// Past the 32 KB window nothing new happens, and big inputs make
		// the fuzzer's minimising slow: run it with -fuzzminimizetime 10x.
		data = data[:min(len(data), 100<<10)]
		c := int(which) % 2 % len(compressors)
		levels := compressors[c].levels
		level := levels[int(which/2)%len(levels)]
		rng := rand.New(rand.NewPCG(seed, seed>>32))
		z := compress(t, c, level, data, int(flushEvery), rng)
		got, err := decodeRandom(t, z, rng)
		if err != nil {
			t.Fatalf("%s level %d: %v", compressors[c].name, level, err)
		}
		if !bytes.Equal(got, data) {
			t.Fatalf("%s level %d: output differs from the input (%d bytes against %d)", compressors[c].name, level, len(got), len(data))
		}
	})
}

// sameStreamAsStd reads the gzip file at path with this package, in
// random pieces into random buffers, and with the standard library, and
// compares the two outputs by their SHA-256 (a trace may be gigabytes).
func sameStreamAsStd(t *testing.T, path string, rng *rand.Rand) {
	t.Helper()
	std := func() ([]byte, error) {
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		r, err := stdgzip.NewReader(f)
		if err != nil {
			return nil, err
		}
		h := sha256.New()
		_, err = io.Copy(h, r)
		return h.Sum(nil), err
	}
	want, err := std()
	if err != nil {
		t.Fatalf("%s, standard library: %v", path, err)
	}
	z, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer z.Close()
	h := sha256.New()
	r, err := NewReader(&filePieces{f: z, rng: rng, max: 1 + rng.IntN(200<<10)})
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if err := readRandomTo(t, r, rng, 1+rng.IntN(1<<20), func(b []byte) { h.Write(b) }); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if got := h.Sum(nil); !bytes.Equal(got, want) {
		t.Fatalf("%s: output differs from the standard library's (SHA-256 %x against %x)", path, got, want)
	}
}

// filePieces reads a file in pieces of 1..max bytes.
type filePieces struct {
	f   io.Reader
	rng *rand.Rand
	max int
}

func (p *filePieces) Read(b []byte) (int, error) {
	return p.f.Read(b[:min(len(b), 1+p.rng.IntN(p.max))])
}

// TestCorpusTraces reads the corpus's real traces as the standard library
// does. By default only those under 1.2 MB (some 80 MB of JSON in all),
// to keep the package's tests quick; PROFILE_MODEL_INFLATE_LONG=1 reads
// them all.
func TestCorpusTraces(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join(corpus.Dir(t), "traces", "*.gz"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no traces in the corpus: %v", err)
	}
	all := os.Getenv("PROFILE_MODEL_INFLATE_LONG") != ""
	rng := rand.New(rand.NewPCG(33, 34))
	read := 0
	for _, path := range paths {
		if fi, err := os.Stat(path); err != nil || (!all && fi.Size() > 1200<<10) {
			continue
		}
		sameStreamAsStd(t, path, rng)
		read++
	}
	if read == 0 {
		t.Fatalf("none of the %d traces is small enough to read", len(paths))
	}
	t.Logf("%d of %d traces read", read, len(paths))
}

// TestCorpusStreams reads $PROFILE_MODEL_GUNZIP (a large gzip file) as
// the standard library does; unset, it is skipped, as the file is big.
func TestCorpusStreams(t *testing.T) {
	path := os.Getenv("PROFILE_MODEL_GUNZIP")
	if path == "" {
		t.Skip("set PROFILE_MODEL_GUNZIP=trace.json.gz to compare the reading of that file in random pieces")
	}
	sameStreamAsStd(t, path, rand.New(rand.NewPCG(31, 32)))
}
