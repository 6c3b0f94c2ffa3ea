package bench

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// traceAppearTimeout is how long after /stop_profile replied the client
// waits for the first sign of an export (a new .json or .json.gz in the
// trace directory or its rank directories) before it says the directory
// is probably not the server's. Engines write their trace file as the
// export starts; only its end takes the export's whole time.
const traceAppearTimeout = 30 * time.Second

// traceAppearAfterDone replaces TraceAppearTimeout when the reply listed
// its traces: the export is done, so its files are there already.
const traceAppearAfterDone = 5 * time.Second

// profilerDirHint says where engines take their profiler directory from.
// SGLang has no flag for it: its /start_profile takes an output_dir, and
// without one $SGLANG_TORCH_PROFILER_DIR, else /tmp.
const profilerDirHint = "ATOM takes it from --torch-profiler-dir, vLLM from --profiler-config's torch_profiler_dir ($VLLM_TORCH_PROFILER_DIR before February 2026), SGLang from $SGLANG_TORCH_PROFILER_DIR (else /tmp)"

// checkTraceDir checks --trace-dir before the first level: a file or an
// unreadable directory is an error; a directory no one may write to and a
// directory that does not exist yet (the engine makes it at its first
// export) are noted in log.
func checkTraceDir(dir string, log io.Writer) error {
	info, err := os.Stat(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		fmt.Fprintf(log, "trace directory %s does not exist yet: the server makes it at its first export (if no trace appears there within %v of /stop_profile, it is not the server's profiler directory)\n", dir, traceAppearTimeout)
		return nil
	case err != nil:
		return fmt.Errorf("--trace-dir %s: %w", dir, err)
	case !info.IsDir():
		return fmt.Errorf("--trace-dir %s is a file, not a directory: pass the server's torch profiler directory (%s)", dir, profilerDirHint)
	}
	if _, err := os.ReadDir(dir); err != nil {
		return fmt.Errorf("--trace-dir %s: cannot list it, so its traces cannot be found: %w", dir, err)
	}
	if info.Mode().Perm()&0o222 == 0 {
		fmt.Fprintf(log, "warning: trace directory %s has no write permission for anyone (mode %v): only a server running as root can export there\n", dir, info.Mode().Perm())
	}
	return nil
}

// stopReplyDirs returns the trace directories a /stop_profile reply lists
// (ATOM's: {"traces": [{"trace_dir": D, ...}]}, or a list of paths in
// older releases); nil when it lists none, as replies sent before the
// export do.
func stopReplyDirs(body []byte) []string {
	var reply struct {
		Traces []jsontext.Value `json:"traces"`
	}
	if json.Unmarshal(body, &reply) != nil {
		return nil
	}
	var dirs []string
	for _, v := range reply.Traces {
		var s string
		var obj struct {
			TraceDir string `json:"trace_dir"`
		}
		switch {
		case json.Unmarshal(v, &s) == nil && s != "":
			dirs = append(dirs, s)
		case json.Unmarshal(v, &obj) == nil && obj.TraceDir != "":
			dirs = append(dirs, obj.TraceDir)
		}
	}
	return dirs
}

// noTraceError is the error of an export that left no file in dir.
func noTraceError(dir string, waited time.Duration, reported []string) error {
	msg := fmt.Sprintf("no new trace file (.json or .json.gz) appeared in %s or its rank directories within %v of /stop_profile's reply: it is probably not the server's profiler directory (%s)",
		dir, waited.Round(time.Second), profilerDirHint)
	if len(reported) > 0 {
		msg += "; the server reports writing to " + strings.Join(reported, ", ")
	}
	return errors.New(msg)
}
