package trim_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/klauspost/compress/gzip"
)

// checkChromeTrace checks the rules of the Chrome trace-event format that
// Perfetto and chrome://tracing enforce when they load a JSON trace, and
// returns the first broken one:
//
//   - the document is a JSON object with a traceEvents array of objects;
//   - every event has a one-letter ph; every event but M has a string name,
//     pid and tid (number or string) and a numeric ts;
//   - a complete (X) event has a numeric dur >= 0;
//   - an M event names a process or thread property and carries it in args;
//   - flow events (s, t, f) carry an id, every flow (cat, id) has both a
//     start and an end, and each end binds to a kept slice: an X event on
//     the same pid and tid starting at the same ts (no dangling arrow).
func checkChromeTrace(data []byte) error {
	if len(data) > 2 && data[0] == 0x1f && data[1] == 0x8b {
		zr, err := gzip.NewReader(bytes.NewReader(data))
		if err != nil {
			return err
		}
		if data, err = io.ReadAll(zr); err != nil {
			return err
		}
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(data, &doc); err != nil {
		return fmt.Errorf("not a JSON object: %w", err)
	}
	raw, ok := doc["traceEvents"]
	if !ok {
		return fmt.Errorf("no traceEvents")
	}
	// Typed fields, json v2: a 60 MB trace checks in seconds, not tens.
	var events []struct {
		Ph   *string        `json:"ph"`
		Name *string        `json:"name"`
		Pid  jsontext.Value `json:"pid"`
		Tid  jsontext.Value `json:"tid"`
		ID   jsontext.Value `json:"id"`
		TS   *float64       `json:"ts"`
		Dur  *float64       `json:"dur"`
		Cat  string         `json:"cat"`
		Args jsontext.Value `json:"args"`
	}
	if err := jsonv2.Unmarshal(raw, &events); err != nil {
		return fmt.Errorf("traceEvents is not an array of well-typed events: %w", err)
	}
	type slice struct {
		pid, tid string
		ts       float64
	}
	starts := map[slice]bool{}
	type flowKey struct{ cat, id string }
	type flowEnd struct {
		ph string
		at slice
		i  int
	}
	flows := map[flowKey][]flowEnd{}
	for i, ev := range events {
		if ev.Ph == nil || len(*ev.Ph) != 1 {
			return fmt.Errorf("traceEvents[%d]: ph is not a one-letter string", i)
		}
		ph := *ev.Ph
		if ev.Name == nil {
			return fmt.Errorf("traceEvents[%d]: no name", i)
		}
		pid, tid := string(ev.Pid), string(ev.Tid)
		if !isID(ev.Pid) || (ph != "M" && !isID(ev.Tid)) {
			return fmt.Errorf("traceEvents[%d]: pid %s / tid %s is not a number or a string", i, pid, tid)
		}
		var ts float64
		if ph != "M" {
			if ev.TS == nil {
				return fmt.Errorf("traceEvents[%d]: no ts", i)
			}
			ts = *ev.TS
		}
		switch ph {
		case "X":
			if ev.Dur == nil || *ev.Dur < 0 {
				return fmt.Errorf("traceEvents[%d]: X event with dur %v (want a number >= 0)", i, ev.Dur)
			}
			starts[slice{pid, tid, ts}] = true
		case "M":
			var args map[string]json.RawMessage
			if err := json.Unmarshal(ev.Args, &args); err != nil {
				return fmt.Errorf("traceEvents[%d]: M event without args", i)
			}
			key := map[string]string{
				"process_name": "name", "thread_name": "name", "process_labels": "labels",
				"process_sort_index": "sort_index", "thread_sort_index": "sort_index",
			}[*ev.Name]
			if key == "" {
				return fmt.Errorf("traceEvents[%d]: M event %q is not a process or thread property", i, *ev.Name)
			}
			if _, ok := args[key]; !ok {
				return fmt.Errorf("traceEvents[%d]: M event %q without args.%s", i, *ev.Name, key)
			}
		case "s", "t", "f":
			if !isID(ev.ID) {
				return fmt.Errorf("traceEvents[%d]: flow event without an id", i)
			}
			k := flowKey{ev.Cat, string(ev.ID)}
			flows[k] = append(flows[k], flowEnd{ph, slice{pid, tid, ts}, i})
		}
	}
	for k, ends := range flows {
		var s, f bool
		for _, e := range ends {
			s = s || e.ph == "s"
			f = f || e.ph == "f"
			if !starts[e.at] {
				return fmt.Errorf("traceEvents[%d]: flow %s id %s binds to no slice (pid %s tid %s ts %v)", e.i, k.cat, k.id, e.at.pid, e.at.tid, e.at.ts)
			}
		}
		if !s || !f {
			return fmt.Errorf("flow %s id %s has a start %v and an end %v: both are needed", k.cat, k.id, s, f)
		}
	}
	return nil
}

// isID says whether a pid, tid or flow id is a number or a string.
func isID(raw jsontext.Value) bool {
	return len(raw) > 0 && (raw.Kind() == '"' || raw.Kind() == '0')
}

func gunzip(data []byte, w io.Writer) error {
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return err
	}
	_, err = io.Copy(w, zr)
	return err
}
