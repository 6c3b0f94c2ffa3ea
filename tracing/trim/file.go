package trim

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/klauspost/compress/gzip"

	"github.com/profile-model/profile-model/internal/atomicfile"
	"github.com/profile-model/profile-model/internal/jsonscan"
)

// ErrExists is returned by File when the output exists and force is off.
var ErrExists = atomicfile.ErrExists

// ErrInput is returned by File when the output is its input, force or not.
var ErrInput = atomicfile.ErrInput

// File trims the trace at in into out, gzip when out ends in ".gz". out
// appears whole or not at all (a temporary file is renamed into place), an
// existing out (or a symbolic link there) is replaced only with force, and
// never when it is in.
func File(ctx context.Context, in, out string, force bool, opts Options) (*Result, error) {
	if err := atomicfile.CheckOutputs(force, []string{in}, out); err != nil {
		return nil, err
	}
	f, err := jsonscan.OpenFile(ctx, in)
	if err != nil {
		return nil, fmt.Errorf("opening trace: %w", err)
	}
	defer f.Close()
	defer jsonscan.InterruptOnCancel(ctx, f)()
	var res *Result
	var trimErr error
	err = atomicfile.WriteFunc(out, func(w io.Writer) error {
		var zw *gzip.Writer
		if strings.HasSuffix(out, ".gz") {
			zw = gzip.NewWriter(w)
			w = zw
		}
		res, trimErr = Trim(ctx, f, w, opts)
		if trimErr != nil {
			return trimErr
		}
		if zw != nil {
			return zw.Close()
		}
		return nil
	})
	if trimErr != nil {
		// About the input, not the output (which is not written).
		return nil, fmt.Errorf("%s: %w", in, trimErr)
	}
	return res, err
}

// ListFile is List of the trace at path; a FIFO or pipe that sends nothing
// does not hold up ctx's cancellation.
func ListFile(ctx context.Context, path string) ([]Step, error) {
	f, err := jsonscan.OpenFile(ctx, path)
	if err != nil {
		return nil, fmt.Errorf("opening trace: %w", err)
	}
	defer f.Close()
	defer jsonscan.InterruptOnCancel(ctx, f)()
	return List(ctx, f)
}
