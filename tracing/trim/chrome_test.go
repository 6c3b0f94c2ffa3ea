package trim_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"

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
	var events []map[string]json.RawMessage
	if err := json.Unmarshal(raw, &events); err != nil {
		return fmt.Errorf("traceEvents is not an array of objects: %w", err)
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
		var ph string
		if err := json.Unmarshal(ev["ph"], &ph); err != nil || len(ph) != 1 {
			return fmt.Errorf("traceEvents[%d]: ph %s is not a one-letter string", i, ev["ph"])
		}
		var name string
		if err := json.Unmarshal(ev["name"], &name); err != nil {
			return fmt.Errorf("traceEvents[%d]: name %s is not a string", i, ev["name"])
		}
		pid, tid := string(ev["pid"]), string(ev["tid"])
		if !isID(ev["pid"]) || (ph != "M" && !isID(ev["tid"])) {
			return fmt.Errorf("traceEvents[%d]: pid %s / tid %s is not a number or a string", i, pid, tid)
		}
		var ts float64
		if ph != "M" {
			if err := json.Unmarshal(ev["ts"], &ts); err != nil {
				return fmt.Errorf("traceEvents[%d]: ts %s is not a number", i, ev["ts"])
			}
		}
		switch ph {
		case "X":
			var dur float64
			if err := json.Unmarshal(ev["dur"], &dur); err != nil || dur < 0 {
				return fmt.Errorf("traceEvents[%d]: X event with dur %s (want a number >= 0)", i, ev["dur"])
			}
			starts[slice{pid, tid, ts}] = true
		case "M":
			var args map[string]json.RawMessage
			if err := json.Unmarshal(ev["args"], &args); err != nil {
				return fmt.Errorf("traceEvents[%d]: M event without args", i)
			}
			key := map[string]string{
				"process_name": "name", "thread_name": "name", "process_labels": "labels",
				"process_sort_index": "sort_index", "thread_sort_index": "sort_index",
			}[name]
			if key == "" {
				return fmt.Errorf("traceEvents[%d]: M event %q is not a process or thread property", i, name)
			}
			if _, ok := args[key]; !ok {
				return fmt.Errorf("traceEvents[%d]: M event %q without args.%s", i, name, key)
			}
		case "s", "t", "f":
			id, ok := ev["id"]
			if !ok || !isID(id) {
				return fmt.Errorf("traceEvents[%d]: flow event without an id", i)
			}
			var cat string
			json.Unmarshal(ev["cat"], &cat)
			k := flowKey{cat, string(id)}
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

func isID(raw json.RawMessage) bool {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return false
	}
	switch v.(type) {
	case float64, string:
		return true
	}
	return false
}

func gunzip(data []byte, w io.Writer) error {
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return err
	}
	_, err = io.Copy(w, zr)
	return err
}
