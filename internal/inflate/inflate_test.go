package inflate

import (
	"bytes"
	stdgzip "compress/gzip"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	kgzip "github.com/klauspost/compress/gzip"
)

// corpusLike makes data with the texture of a trace: repeated JSON events
// whose numbers drift, and some noise, so that every kind of match occurs
// (short and long, overlapping, near and 32 KB back).
func corpusLike(rng *rand.Rand, n int) []byte {
	var b bytes.Buffer
	names := []string{"void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>", "ampere_bf16_s16816gemm_bf16_128x64_ldg8_f2f_stages_64x4_tn", "flash_fwd_splitkv_kernel", "cudaLaunchKernel"}
	ts := int64(1_700_000_000_000)
	for b.Len() < n {
		switch rng.IntN(10) {
		case 0: // noise: literals only
			for range rng.IntN(300) {
				b.WriteByte(byte(rng.IntN(256)))
			}
		case 1: // a run (distance 1) and short periods
			c := byte('a' + rng.IntN(26))
			b.Write(bytes.Repeat([]byte{c}, 1+rng.IntN(600)))
			b.Write(bytes.Repeat([]byte("xyz"[:1+rng.IntN(3)]), 1+rng.IntN(300)))
		default:
			ts += int64(rng.IntN(5000))
			fmt.Fprintf(&b, `{"ph":"X","cat":"kernel","name":%q,"pid":0,"tid":7,"ts":%d.%03d,"dur":%d,"args":{"correlation":%d,"grid":[%d,1,1]}},`+"\n",
				names[rng.IntN(len(names))], ts/1000, ts%1000, rng.IntN(90000), rng.IntN(1<<30), rng.IntN(2048))
		}
	}
	return b.Bytes()[:n]
}

func gz(t testing.TB, data []byte, level int) []byte {
	var b bytes.Buffer
	w, err := stdgzip.NewWriterLevel(&b, level)
	if err != nil {
		t.Fatal(err)
	}
	w.Name = "trace.json" // a header with FNAME
	if _, err := w.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// readAll reads r with buffers of the given size (small ones stop matches
// and blocks midway).
func readAll(r io.Reader, bufSize int) ([]byte, error) {
	var out []byte
	buf := make([]byte, bufSize)
	for {
		n, err := r.Read(buf)
		out = append(out, buf[:n]...)
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
	}
}

// oneByteReader hands out its input a byte at a time.
type oneByteReader struct{ r io.Reader }

func (o oneByteReader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	return o.r.Read(p[:1])
}

func TestSameAsStandardLibrary(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, size := range []int{0, 1, 100, 40 << 10, 1 << 20, 3<<20 + 17} {
		data := corpusLike(rng, size)
		for _, level := range []int{stdgzip.NoCompression, stdgzip.HuffmanOnly, stdgzip.BestSpeed, 6, stdgzip.BestCompression} {
			z := gz(t, data, level)
			for _, bufSize := range []int{1, 7, 300, 64 << 10, 512 << 10} {
				if size > 100<<10 && bufSize < 300 {
					continue // slow and covered by the small sizes
				}
				name := fmt.Sprintf("size %d level %d buffer %d", size, level, bufSize)
				got, err := readAll(newReader(bytes.NewReader(z)), bufSize)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				if !bytes.Equal(got, data) {
					t.Fatalf("%s: output differs from the input (%d bytes against %d)", name, len(got), len(data))
				}
			}
			got, err := readAll(newReader(oneByteReader{bytes.NewReader(z)}), 4096)
			if err != nil || !bytes.Equal(got, data) {
				t.Fatalf("size %d level %d, input a byte at a time: %v (equal %v)", size, level, err, bytes.Equal(got, data))
			}
		}
	}
}

func TestMembers(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	a, b := corpusLike(rng, 70<<10), corpusLike(rng, 5000)
	za, zb := gz(t, a, 6), gz(t, b, 1)
	r, err := NewReader(bytes.NewReader(append(append([]byte{}, za...), zb...)))
	if err != nil {
		t.Fatal(err)
	}
	var out, in int64 = -1, -1
	r.SecondMember = func(o, i int64) { out, in = o, i }
	got, err := readAll(r, 4096)
	if err != nil {
		t.Fatal(err)
	}
	if want := append(append([]byte{}, a...), b...); !bytes.Equal(got, want) {
		t.Fatalf("two members: output differs (%d bytes against %d)", len(got), len(want))
	}
	if out != int64(len(a)) || in != int64(len(za)) {
		t.Fatalf("second member reported at output %d, input %d; want %d, %d", out, in, len(a), len(za))
	}

	// Data after a member that is not gzip is an error, as in the
	// standard reader.
	_, err = readAll(newReader(bytes.NewReader(append(append([]byte{}, za...), "not gzip at all"...))), 4096)
	if !errors.Is(err, ErrHeader) {
		t.Fatalf("trailing garbage: got %v, want ErrHeader", err)
	}
}

// TestZeroPadding: zero bytes after a member, before another or at the
// end, are skipped as Python's gzip module skips them; the members around
// them are read whole and checked.
func TestZeroPadding(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	a, b := corpusLike(rng, 3000), corpusLike(rng, 2000)
	za, zb := gz(t, a, 6), gz(t, b, 6)
	zeros := func(n int) []byte { return make([]byte, n) }
	join := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	for name, c := range map[string]struct {
		z    []byte
		want []byte
	}{
		"1 zero after":         {join(za, zeros(1)), a},
		"10 zeros after":       {join(za, zeros(10)), a},
		"a block of zeros":     {join(za, zeros(512<<10)), a},
		"zeros between":        {join(za, zeros(512), zb), append(append([]byte{}, a...), b...)},
		"zeros between, after": {join(za, zeros(7), zb, zeros(3)), append(append([]byte{}, a...), b...)},
	} {
		got, err := readAll(newReader(bytes.NewReader(c.z)), 4096)
		if err != nil || !bytes.Equal(got, c.want) {
			t.Errorf("%s: %d bytes, %v; want %d bytes, no error", name, len(got), err, len(c.want))
		}
	}
	// The checksum of a member before the padding is still checked.
	bad := join(za, zeros(16))
	bad[len(za)-8] ^= 1
	if _, err := readAll(newReader(bytes.NewReader(bad)), 4096); !errors.Is(err, ErrChecksum) {
		t.Errorf("bad CRC before zeros: %v, want ErrChecksum", err)
	}
	// A non-zero byte after the zeros is not a member.
	if _, err := readAll(newReader(bytes.NewReader(join(za, zeros(4), []byte("x")))), 4096); err == nil {
		t.Error("a stray byte after zeros: no error")
	}
}

func TestBadInput(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	data := corpusLike(rng, 200<<10)
	z := gz(t, data, 6)

	// Every cut of the stream fails, and never with a wrong success.
	for cut := 0; cut < len(z); cut += 1 + cut/50 {
		_, err := readAll(newReader(bytes.NewReader(z[:cut])), 64<<10)
		if err == nil {
			t.Fatalf("stream cut at %d of %d bytes: no error", cut, len(z))
		}
		if cut >= 10 && !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatalf("stream cut at %d of %d bytes: %v, want unexpected EOF", cut, len(z), err)
		}
	}

	// A changed byte in the data or the trailer is caught: by the
	// decoder or by the checksum, as the standard reader catches it.
	for i := 0; i < 300; i++ {
		bad := append([]byte{}, z...)
		at := 10 + rng.IntN(len(z)-10)
		bad[at] ^= byte(1 + rng.IntN(255))
		_, err := readAll(newReader(bytes.NewReader(bad)), 64<<10)
		_, stdErr := readAll(stdReader(t, bad), 64<<10)
		if (err == nil) != (stdErr == nil) {
			t.Fatalf("byte %d changed: error %v, standard library's %v", at, err, stdErr)
		}
		if err == nil {
			t.Fatalf("byte %d changed: no error", at)
		}
	}

	if _, err := readAll(newReader(bytes.NewReader([]byte("{\"traceEvents\":[]}"))), 4096); !errors.Is(err, ErrHeader) {
		t.Fatalf("plain JSON: %v, want ErrHeader", err)
	}
}

func stdReader(t *testing.T, z []byte) io.Reader {
	r, err := stdgzip.NewReader(bytes.NewReader(z))
	if err != nil {
		return errReader{err}
	}
	r.Multistream(false)
	return r
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// FuzzInflate holds the decoder to the standard library on any input:
// the same output, and an error where it has one. The input comes in
// pieces and is read into buffers of sizes drawn from the input itself,
// so that a failure replays.
func FuzzInflate(f *testing.F) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, n := range []int{0, 10, 3000} {
		f.Add(gz(f, corpusLike(rng, n), 6))
		f.Add(gz(f, corpusLike(rng, n), stdgzip.HuffmanOnly))
	}
	f.Fuzz(func(t *testing.T, z []byte) {
		rng := rand.New(rand.NewPCG(uint64(len(z)), uint64(crc32.ChecksumIEEE(z))))
		got, err := decodeRandom(t, z, rng)
		want, stdErr := stdDecode(z)
		if errors.Is(err, ErrHeader) && stdErr == nil && reservedFlag(z) {
			return // RFC 1952 makes it an error; the standard library reads on
		}
		if (err == nil) != (stdErr == nil) {
			t.Fatalf("error %v, standard library's %v", err, stdErr)
		}
		if err == nil && !bytes.Equal(got, want) {
			t.Fatalf("output differs from the standard library's")
		}
	})
}

// reservedFlag reports whether this package stops z at a member header
// with a reserved FLG bit set.
func reservedFlag(z []byte) bool {
	r, err := NewReader(bytes.NewReader(z))
	if err != nil {
		return len(z) > 3 && z[3]&0xe0 != 0
	}
	if _, err := io.ReadAll(r); !errors.Is(err, ErrHeader) {
		return false
	}
	at := r.InputOffset() - 10 // the header's fixed part has been read
	return at >= 0 && z[at+3]&0xe0 != 0
}

// TestInflateTime times this reader and klauspost's on
// $PROFILE_MODEL_GUNZIP, into 512 KB buffers (as a trace is read).
func TestInflateTime(t *testing.T) {
	path := os.Getenv("PROFILE_MODEL_GUNZIP")
	if path == "" {
		t.Skip("set PROFILE_MODEL_GUNZIP=trace.json.gz to time decompression of that file")
	}
	for _, which := range []string{"inflate", "klauspost", "inflate", "klauspost"} {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		var r io.Reader
		if which == "klauspost" {
			r, err = kgzip.NewReader(f)
		} else {
			r, err = NewReader(f)
		}
		if err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 512<<10)
		var n int64
		for {
			k, err := io.ReadFull(r, buf)
			n += int64(k)
			if err == io.EOF || err == io.ErrUnexpectedEOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		f.Close()
		t.Logf("%s: %d bytes in %v", which, n, time.Since(start))
	}
}

// newReader is NewReader that defers its error to the first Read, as the
// tests compare errors at the end.
func newReader(r io.Reader) io.Reader {
	z, err := NewReader(r)
	if err != nil {
		return errReader{err}
	}
	return z
}

// BenchmarkInflate reads 16 MB of trace-like JSON (gzip, level 6) into
// 512 KB buffers, as a trace read does: this reader against klauspost's
// (the floor scripts/time-trace.sh states its ratios against). SetBytes
// is the uncompressed size.
func BenchmarkInflate(b *testing.B) {
	data := corpusLike(rand.New(rand.NewPCG(9, 10)), 16<<20)
	z := gz(b, data, 6)
	buf := make([]byte, 512<<10)
	for _, which := range []string{"inflate", "klauspost"} {
		b.Run(which, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				var r io.Reader
				var err error
				if which == "inflate" {
					r, err = NewReader(bytes.NewReader(z))
				} else {
					r, err = kgzip.NewReader(bytes.NewReader(z))
				}
				if err != nil {
					b.Fatal(err)
				}
				n := 0
				for err == nil {
					var k int
					k, err = io.ReadFull(r, buf)
					n += k
				}
				if n != len(data) {
					b.Fatalf("read %d bytes, want %d (%v)", n, len(data), err)
				}
			}
		})
	}
}
