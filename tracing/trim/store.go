package trim

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
)

// store holds raw events whose fate is decided later, in memory up to a
// limit and in a temporary file beyond it, so that memory stays bounded
// whatever the trace's size.
type store struct {
	mem   [][]byte // chunks of length-prefixed records
	size  int      // bytes in mem
	limit int
	dir   string
	f     *os.File
	w     *bufio.Writer
	n     int64 // records
	spill int64 // bytes written to the file
}

func newStore(limit int, dir string) *store { return &store{limit: limit, dir: dir} }

func (s *store) add(raw []byte) error {
	s.n++
	if s.f == nil && s.size+len(raw)+4 <= s.limit {
		// Chunks of 1 MB: no copying as the store grows.
		if len(s.mem) == 0 || cap(s.mem[len(s.mem)-1])-len(s.mem[len(s.mem)-1]) < len(raw)+4 {
			s.mem = append(s.mem, make([]byte, 0, max(1<<20, len(raw)+4)))
		}
		c := &s.mem[len(s.mem)-1]
		*c = binary.LittleEndian.AppendUint32(*c, uint32(len(raw)))
		*c = append(*c, raw...)
		s.size += len(raw) + 4
		return nil
	}
	if s.f == nil {
		f, err := os.CreateTemp(s.dir, "profile-model-trim-*")
		if err != nil {
			return fmt.Errorf("holding events in a temporary file: %w (set TMPDIR to a directory with room)", err)
		}
		// Unlinked at once where the OS allows it (Unix): the open file
		// stays readable, and nothing is left behind if the process is
		// killed.
		_ = os.Remove(f.Name())
		s.f, s.w = f, bufio.NewWriterSize(f, 1<<20)
	}
	var n [4]byte
	binary.LittleEndian.PutUint32(n[:], uint32(len(raw)))
	s.w.Write(n[:])
	_, err := s.w.Write(raw)
	s.spill += int64(len(raw)) + 4
	if err != nil {
		return fmt.Errorf("holding events in %s: %w", s.f.Name(), err)
	}
	return nil
}

// each calls fn with every record in the order added; the bytes are valid
// during the call only.
func (s *store) each(fn func(raw []byte) error) error {
	for _, b := range s.mem {
		for len(b) > 0 {
			n := int(binary.LittleEndian.Uint32(b))
			if err := fn(b[4 : 4+n]); err != nil {
				return err
			}
			b = b[4+n:]
		}
	}
	if s.f == nil {
		return nil
	}
	if err := s.w.Flush(); err != nil {
		return fmt.Errorf("holding events in %s: %w", s.f.Name(), err)
	}
	if _, err := s.f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	r := bufio.NewReaderSize(s.f, 1<<20)
	var buf []byte
	for {
		var hdr [4]byte
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return fmt.Errorf("reading back %s: %w", s.f.Name(), err)
		}
		n := int(binary.LittleEndian.Uint32(hdr[:]))
		if cap(buf) < n {
			buf = make([]byte, n)
		}
		buf = buf[:n]
		if _, err := io.ReadFull(r, buf); err != nil {
			return fmt.Errorf("reading back %s: %w", s.f.Name(), err)
		}
		if err := fn(buf); err != nil {
			return err
		}
	}
	// Append after the end again, should more come.
	_, err := s.f.Seek(0, io.SeekEnd)
	return err
}

// close removes the temporary file, if any (where it could not be unlinked
// while open).
func (s *store) close() {
	if s.f != nil {
		s.f.Close()
		_ = os.Remove(s.f.Name())
		s.f = nil
	}
	s.mem = nil
}
