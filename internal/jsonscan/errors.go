package jsonscan

import (
	"errors"
	"fmt"
	"io"

	"github.com/profile-model/profile-model/internal/inflate"
)

// The errors a reader reports: input that is not a trace, input cut short,
// and a gzip trailer that is bad after the JSON ended.

// SyntaxError reports input that is not a Kineto trace, with where.
type SyntaxError struct {
	Offset int64 // byte offset in the uncompressed JSON
	Event  int64 // index in traceEvents, -1 outside it
	Msg    string
}

func (e *SyntaxError) Error() string {
	if e.Event >= 0 {
		return fmt.Sprintf("byte %d (traceEvents[%d]): %s", e.Offset, e.Event, e.Msg)
	}
	return fmt.Sprintf("byte %d: %s", e.Offset, e.Msg)
}

// TruncatedError reports input that ends before the JSON does: a trace
// whose export was killed, or a partly copied file.
type TruncatedError struct {
	Offset           int64 // uncompressed bytes read
	CompressedOffset int64 // compressed bytes read, -1 when not gzip
	Events           int64 // traceEvents entries read completely
	Err              error // the read error (io.ErrUnexpectedEOF, ...), nil for a clean EOF
}

func (e *TruncatedError) Error() string {
	where := fmt.Sprintf("at byte %d", e.Offset)
	if e.CompressedOffset >= 0 {
		where = fmt.Sprintf("at uncompressed byte %d (compressed byte %d)", e.Offset, e.CompressedOffset)
	}
	msg := fmt.Sprintf("trace is truncated: input ends %s after %d complete events", where, e.Events)
	if e.Err != nil {
		msg += " (" + e.Err.Error() + ")"
	}
	return msg + "; the export was probably killed or the copy is incomplete"
}

func (e *TruncatedError) Unwrap() error { return e.Err }

// TrailerError reports a gzip stream that is bad after the JSON ended
// cleanly: a checksum (CRC-32 or size) mismatch, a missing trailer, or
// bytes after the last member that are not gzip. The events read are
// complete, but with a checksum mismatch some of them may be wrong.
type TrailerError struct {
	CompressedOffset int64 // compressed bytes read
	Err              error
}

func (e *TrailerError) Error() string {
	switch {
	case errors.Is(e.Err, inflate.ErrChecksum):
		return "gzip checksum mismatch: the file is corrupt; copy or export it again"
	case errors.Is(e.Err, io.ErrUnexpectedEOF):
		return fmt.Sprintf("the gzip stream ends unexpectedly at compressed byte %d, after the JSON: its checksum is missing (the file was cut short) or stray bytes follow it, so it could not be verified; copy or export it again", e.CompressedOffset)
	case errors.Is(e.Err, inflate.ErrHeader):
		return fmt.Sprintf("bytes that are not gzip follow the gzip stream (before compressed byte %d); they were ignored", e.CompressedOffset)
	}
	return fmt.Sprintf("reading the gzip stream after the JSON (compressed byte %d): %v", e.CompressedOffset, e.Err)
}

func (e *TrailerError) Unwrap() error { return e.Err }
