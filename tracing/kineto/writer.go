package kineto

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"unicode/utf8"

	"github.com/klauspost/compress/gzip"

	"github.com/profile-model/profile-model/internal/units"
)

// DeviceProperties is one entry of a Kineto trace's deviceProperties list.
type DeviceProperties struct {
	ID                               int
	Name                             string
	TotalGlobalMem                   int64
	ComputeMajor, ComputeMinor       int
	MaxThreadsPerBlock               int
	MaxThreadsPerMultiprocessor      int
	RegsPerBlock                     int
	WarpSize                         int
	SharedMemPerBlock                int
	NumSms                           int
	MaxSharedMemoryPerMultiProcessor int
}

// WriterOptions is the header and footer of a trace written by Writer.
// Kineto writes traceName, displayTimeUnit and baseTimeNanoseconds after
// traceEvents; Writer does the same unless MetaFirst is set.
type WriterOptions struct {
	Devices           []DeviceProperties
	RoctracerVersion  string // e.g. "4.1"; empty leaves out the ROCm keys
	HIPRuntimeVersion int64
	WorldSize         int   // distributedInfo; 0 leaves it out
	Rank              int   // distributedInfo rank
	BaseTimeNS        int64 // event times are written relative to it; 0 writes absolute times
	TraceName         string
	DisplayTimeUnit   string // "ms" when empty
	TraceID           string // 32 hex digits; empty leaves it out
	MetaFirst         bool   // write every metadata key before traceEvents
	Gzip              bool   // gzip the output (klauspost)
	GzipLevel         int    // gzip level; 0 means gzip.BestSpeed
}

// argKind says how an Arg's value is written.
type argKind uint8

const (
	argInt argKind = iota
	argString
	argInts // JSON array of integers (grid, block)
	argNull // JSON null
	argDims // JSON array of integer arrays (Input Dims)
	argStrs // JSON array of strings (Input type)
)

// Arg is one entry of an event's args object; IntArg, StrArg, IntsArg and
// NullArg build one.
type Arg struct {
	key  string
	kind argKind
	i    int64
	s    string
	ints []int64
	dims [][]int64
	strs []string
}

func IntArg(k string, v int64) Arg    { return Arg{key: k, kind: argInt, i: v} }
func StrArg(k, v string) Arg          { return Arg{key: k, kind: argString, s: v} }
func IntsArg(k string, v []int64) Arg { return Arg{key: k, kind: argInts, ints: v} }
func NullArg(k string) Arg            { return Arg{key: k, kind: argNull} }

// DimsArg and StrsArg write a CPU op's recorded shapes: "Input Dims" as
// an array of integer arrays, "Input type" as an array of strings.
func DimsArg(k string, v [][]int64) Arg { return Arg{key: k, kind: argDims, dims: v} }
func StrsArg(k string, v []string) Arg  { return Arg{key: k, kind: argStrs, strs: v} }

// Event is one trace event to write. Times are absolute integer
// nanoseconds on the trace clock; Writer subtracts BaseTimeNS and writes
// microseconds with exactly three decimals, so no precision is lost.
type Event struct {
	Ph      byte // 'X' complete, 's'/'f' flow, 'M' metadata, 'i' instant
	Cat     string
	Name    string
	PID     int64
	TID     int64
	PIDName string         // written instead of PID when set (Kineto's "Spans", "Traces")
	TIDName string         // written instead of TID when set
	StrIDs  bool           // write PIDName and TIDName even when empty (Kineto's "Record Window End")
	TS      int64          // ns
	Dur     units.Duration // complete events only
	ID      int64          // flow id
	BP      string         // flow binding point ("e")
	Scope   string         // instant scope ("g", "t")
	Args    []Arg
}

// Writer streams a Kineto Chrome-JSON trace: the header when created, then
// one event per WriteEvent, then the footer on Close. It never holds more
// than one event and a buffer in memory.
type Writer struct {
	opts WriterOptions
	gz   *gzip.Writer
	out  io.Writer // the destination, or the gzip stream over it
	buf  []byte
	// With gzip, a full buffer is compressed on another goroutine while the
	// next one is filled (synth --target-mb 400: 9% less wall time on two
	// cores). At most one write is in flight; spare is the buffer it does
	// not hold.
	spare    []byte
	inFlight chan error // the in-flight write's result (nil: none)
	events   int64
	bytes    int64
	closed   bool
	err      error
	esc      map[string]string // escaped forms of long strings (kernel names repeat)
}

// maxEscCache bounds the escape cache; names beyond it are escaped each time.
const maxEscCache = 8192

// appendStr appends s as a JSON string, from the cache when s is long.
func (w *Writer) appendStr(b []byte, s string) []byte {
	if len(s) < 48 {
		return appendJSONString(b, s)
	}
	if e, ok := w.esc[s]; ok {
		return append(b, e...)
	}
	start := len(b)
	b = appendJSONString(b, s)
	if len(w.esc) < maxEscCache {
		if w.esc == nil {
			w.esc = make(map[string]string)
		}
		w.esc[s] = string(b[start:])
	}
	return b
}

// NewWriter writes the trace header to w and returns a Writer for its events.
// Close writes the footer and flushes; it does not close w.
func NewWriter(w io.Writer, opts WriterOptions) (*Writer, error) {
	if opts.DisplayTimeUnit == "" {
		opts.DisplayTimeUnit = "ms"
	}
	tw := &Writer{opts: opts, buf: make([]byte, 0, 320<<10)}
	out := w
	if opts.Gzip {
		level := opts.GzipLevel
		if level == 0 {
			level = gzip.BestSpeed
		}
		gz, err := gzip.NewWriterLevel(w, level)
		if err != nil {
			return nil, fmt.Errorf("trace writer: gzip level %d: %w", level, err)
		}
		tw.gz = gz
		out = gz
	}
	tw.out = out
	tw.writeHeader()
	if tw.err != nil {
		return nil, tw.err
	}
	return tw, nil
}

// Events is the number of events written so far.
func (w *Writer) Events() int64 { return w.events }

// Bytes is the number of uncompressed JSON bytes written so far (all of
// them once Close has returned).
func (w *Writer) Bytes() int64 { return w.bytes + int64(len(w.buf)) }

func (w *Writer) flushBuf() {
	if w.gz != nil {
		w.flushAsync()
		return
	}
	if w.err != nil {
		w.buf = w.buf[:0]
		return
	}
	n, err := w.out.Write(w.buf)
	w.bytes += int64(n)
	if err != nil {
		w.err = fmt.Errorf("trace writer: %w", err)
	}
	w.buf = w.buf[:0]
}

// flushAsync hands the buffer to a goroutine that compresses it, after the
// previous one is done, and goes on with the spare buffer. The goroutine
// ends with its write (its result channel is buffered), so a Writer that
// is dropped without Close leaves nothing running.
func (w *Writer) flushAsync() {
	w.wait()
	if w.err != nil || len(w.buf) == 0 {
		w.buf = w.buf[:0]
		return
	}
	full := w.buf
	w.bytes += int64(len(full))
	res := make(chan error, 1)
	w.inFlight = res
	go func() {
		_, err := w.gz.Write(full)
		res <- err
	}()
	if w.spare == nil {
		w.spare = make([]byte, 0, cap(full))
	}
	w.buf, w.spare = w.spare[:0], full
}

// wait waits for the in-flight write and keeps its error.
func (w *Writer) wait() {
	if w.inFlight == nil {
		return
	}
	if err := <-w.inFlight; err != nil && w.err == nil {
		w.err = fmt.Errorf("trace writer: %w", err)
	}
	w.inFlight = nil
}

func (w *Writer) writeHeader() {
	b := w.buf
	b = append(b, "{\n  \"schemaVersion\": 1,\n  \"deviceProperties\": [\n"...)
	for i, d := range w.opts.Devices {
		if i > 0 {
			b = append(b, ",\n"...)
		}
		b = append(b, "    {\n      \"id\": "...)
		b = strconv.AppendInt(b, int64(d.ID), 10)
		b = append(b, ", \"name\": "...)
		b = appendJSONString(b, d.Name)
		b = append(b, ", \"totalGlobalMem\": "...)
		b = strconv.AppendInt(b, d.TotalGlobalMem, 10)
		b = append(b, ",\n      \"computeMajor\": "...)
		b = strconv.AppendInt(b, int64(d.ComputeMajor), 10)
		b = append(b, ", \"computeMinor\": "...)
		b = strconv.AppendInt(b, int64(d.ComputeMinor), 10)
		b = append(b, ",\n      \"maxThreadsPerBlock\": "...)
		b = strconv.AppendInt(b, int64(d.MaxThreadsPerBlock), 10)
		b = append(b, ", \"maxThreadsPerMultiprocessor\": "...)
		b = strconv.AppendInt(b, int64(d.MaxThreadsPerMultiprocessor), 10)
		b = append(b, ",\n      \"regsPerBlock\": "...)
		b = strconv.AppendInt(b, int64(d.RegsPerBlock), 10)
		b = append(b, ", \"warpSize\": "...)
		b = strconv.AppendInt(b, int64(d.WarpSize), 10)
		b = append(b, ",\n      \"sharedMemPerBlock\": "...)
		b = strconv.AppendInt(b, int64(d.SharedMemPerBlock), 10)
		b = append(b, ", \"numSms\": "...)
		b = strconv.AppendInt(b, int64(d.NumSms), 10)
		b = append(b, "\n    , \"maxSharedMemoryPerMultiProcessor\": "...)
		b = strconv.AppendInt(b, int64(d.MaxSharedMemoryPerMultiProcessor), 10)
		b = append(b, "\n    }"...)
	}
	b = append(b, "\n  ],\n"...)
	if w.opts.RoctracerVersion != "" {
		b = append(b, "  \"roctracer_version\": "...)
		b = append(b, w.opts.RoctracerVersion...)
		b = append(b, ",\n  \"hip_runtime_version\": "...)
		b = strconv.AppendInt(b, w.opts.HIPRuntimeVersion, 10)
		b = append(b, ",\n"...)
	}
	if w.opts.WorldSize > 0 {
		b = append(b, "  \"distributedInfo\": {\"backend\": \"nccl\", \"rank\": "...)
		b = strconv.AppendInt(b, int64(w.opts.Rank), 10)
		b = append(b, ", \"world_size\": "...)
		b = strconv.AppendInt(b, int64(w.opts.WorldSize), 10)
		b = append(b, ", \"pg_count\": 1, \"pg_config\": [{\"pg_name\": \"0\", \"pg_desc\": \"default_pg\", \"backend_config\": \"cuda:nccl\", \"pg_size\": "...)
		b = strconv.AppendInt(b, int64(w.opts.WorldSize), 10)
		b = append(b, ", \"ranks\": ["...)
		for r := 0; r < w.opts.WorldSize; r++ {
			if r > 0 {
				b = append(b, ", "...)
			}
			b = strconv.AppendInt(b, int64(r), 10)
		}
		b = append(b, "]}], \"nccl_version\": \"2.27.7\"},\n"...)
	}
	b = append(b, "  \"record_shapes\": 1,\n  \"with_stack\": 1,\n"...)
	if w.opts.TraceID != "" {
		b = append(b, "  \"trace_id\": "...)
		b = appendJSONString(b, w.opts.TraceID)
		b = append(b, ",\n"...)
	}
	if w.opts.MetaFirst {
		b = w.appendTrailingMeta(b)
		b = append(b, ",\n"...)
	}
	b = append(b, "  \"traceEvents\": [\n"...)
	w.buf = b
	w.flushBuf()
}

func (w *Writer) appendTrailingMeta(b []byte) []byte {
	b = append(b, "  \"traceName\": "...)
	b = appendJSONString(b, w.opts.TraceName)
	b = append(b, ",\n  \"displayTimeUnit\": "...)
	b = appendJSONString(b, w.opts.DisplayTimeUnit)
	b = append(b, ",\n  \"baseTimeNanoseconds\": "...)
	b = strconv.AppendInt(b, w.opts.BaseTimeNS, 10)
	return b
}

// WriteEvent writes one event. The first error is sticky and returned by
// every later call and by Close.
func (w *Writer) WriteEvent(e *Event) error {
	if w.err != nil {
		return w.err
	}
	if w.closed {
		return errors.New("trace writer: WriteEvent after Close")
	}
	b := w.buf
	if w.events > 0 {
		b = append(b, ",\n"...)
	}
	b = append(b, "  {\n    "...)
	switch e.Ph {
	case 'M':
		b = append(b, "\"name\": "...)
		b = w.appendStr(b, e.Name)
		b = append(b, ", \"ph\": \"M\", \"ts\": "...)
		b = w.appendTS(b, e.TS)
		b = w.appendPIDTID(b, e)
	case 'i':
		b = append(b, "\"name\": "...)
		b = w.appendStr(b, e.Name)
		b = append(b, ", \"ph\": \"i\""...)
		if e.Scope != "" {
			b = append(b, ", \"s\": "...)
			b = appendJSONString(b, e.Scope)
		}
		b = append(b, ",\n    "...)
		b = w.appendPIDTIDBare(b, e)
		b = append(b, ", \"ts\": "...)
		b = w.appendTS(b, e.TS)
	case 's', 'f':
		b = append(b, "\"ph\": \""...)
		b = append(b, e.Ph)
		b = append(b, "\", \"id\": "...)
		b = strconv.AppendInt(b, e.ID, 10)
		b = w.appendPIDTID(b, e)
		b = append(b, ", \"ts\": "...)
		b = w.appendTS(b, e.TS)
		b = append(b, ",\n    \"cat\": "...)
		b = appendJSONString(b, e.Cat)
		b = append(b, ", \"name\": "...)
		b = w.appendStr(b, e.Name)
		if e.BP != "" {
			b = append(b, ", \"bp\": "...)
			b = appendJSONString(b, e.BP)
		}
	default: // 'X'
		b = append(b, "\"ph\": \"X\", \"cat\": "...)
		b = appendJSONString(b, e.Cat)
		b = append(b, ", \"name\": "...)
		b = w.appendStr(b, e.Name)
		b = w.appendPIDTID(b, e)
		b = append(b, ",\n    \"ts\": "...)
		b = w.appendTS(b, e.TS)
		b = append(b, ", \"dur\": "...)
		b = appendMicros(b, int64(e.Dur))
	}
	if len(e.Args) > 0 || e.Ph == 'X' || e.Ph == 'M' {
		b = append(b, ",\n    \"args\": {\n"...)
		for i := range e.Args {
			a := &e.Args[i]
			if i == 0 {
				b = append(b, "      "...)
			} else {
				b = append(b, ", "...)
			}
			b = appendJSONString(b, a.key)
			b = append(b, ": "...)
			switch a.kind {
			case argInt:
				b = strconv.AppendInt(b, a.i, 10)
			case argString:
				b = w.appendStr(b, a.s)
			case argInts:
				b = append(b, '[')
				for j, v := range a.ints {
					if j > 0 {
						b = append(b, ", "...)
					}
					b = strconv.AppendInt(b, v, 10)
				}
				b = append(b, ']')
			case argNull:
				b = append(b, "null"...)
			case argDims:
				b = append(b, '[')
				for j, d := range a.dims {
					if j > 0 {
						b = append(b, ", "...)
					}
					b = append(b, '[')
					for k, v := range d {
						if k > 0 {
							b = append(b, ", "...)
						}
						b = strconv.AppendInt(b, v, 10)
					}
					b = append(b, ']')
				}
				b = append(b, ']')
			case argStrs:
				b = append(b, '[')
				for j, v := range a.strs {
					if j > 0 {
						b = append(b, ", "...)
					}
					b = appendJSONString(b, v)
				}
				b = append(b, ']')
			}
		}
		if len(e.Args) > 0 {
			b = append(b, '\n')
		}
		b = append(b, "    }"...)
	}
	b = append(b, "\n  }"...)
	w.buf = b
	w.events++
	if len(w.buf) >= 256<<10 { // write in large chunks, no second buffer
		w.flushBuf()
	}
	return w.err
}

func (w *Writer) appendPIDTID(b []byte, e *Event) []byte {
	b = append(b, ", "...)
	return w.appendPIDTIDBare(b, e)
}

func (w *Writer) appendPIDTIDBare(b []byte, e *Event) []byte {
	b = append(b, "\"pid\": "...)
	if e.PIDName != "" || e.StrIDs {
		b = appendJSONString(b, e.PIDName)
	} else {
		b = strconv.AppendInt(b, e.PID, 10)
	}
	b = append(b, ", \"tid\": "...)
	if e.TIDName != "" || e.StrIDs {
		b = appendJSONString(b, e.TIDName)
	} else {
		b = strconv.AppendInt(b, e.TID, 10)
	}
	return b
}

func (w *Writer) appendTS(b []byte, ns int64) []byte {
	return appendMicros(b, ns-w.opts.BaseTimeNS)
}

// appendMicros writes ns as microseconds with exactly three decimals.
func appendMicros(b []byte, ns int64) []byte {
	if ns < 0 {
		b = append(b, '-')
		if ns == -1<<63 { // cannot negate; never a real time
			return append(b, "9223372036854775.808"...)
		}
		ns = -ns
	}
	b = strconv.AppendInt(b, ns/1000, 10)
	frac := ns % 1000
	return append(b, '.', byte('0'+frac/100), byte('0'+frac/10%10), byte('0'+frac%10))
}

// Close writes the footer and flushes (and finishes the gzip stream). It
// does not close the underlying writer.
func (w *Writer) Close() error {
	if w.closed {
		return w.err
	}
	w.closed = true
	b := w.buf
	b = append(b, "\n  ]"...)
	if !w.opts.MetaFirst {
		b = append(b, ",\n"...)
		b = w.appendTrailingMeta(b)
	}
	b = append(b, "\n}\n"...)
	w.buf = b
	w.flushBuf()
	w.wait()
	if w.err != nil {
		return w.err
	}
	if w.gz != nil {
		if err := w.gz.Close(); err != nil {
			w.err = fmt.Errorf("trace writer: gzip: %w", err)
			return w.err
		}
	}
	return nil
}

const hexDigits = "0123456789abcdef"

// appendJSONString appends s as a JSON string. Invalid UTF-8 becomes U+FFFD
// so that the output is always valid JSON.
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, "\ufffd"...)
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
