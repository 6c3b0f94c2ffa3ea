package telemetry

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// The fields asked of nvidia-smi, in its order. The throttle reasons are
// clocks_event_reasons.active from driver R535 on, and
// clocks_throttle_reasons.active before: NvidiaArgs takes which one.
var nvidiaFields = []string{"index", "timestamp", "power.draw", "clocks.sm", "clocks.mem", "temperature.gpu",
	"utilization.gpu", "memory.used", "memory.total"}

// The two spellings of the throttle-reason bitmask.
const (
	NvidiaEventReasons    = "clocks_event_reasons.active"
	NvidiaThrottleReasons = "clocks_throttle_reasons.active"
)

// NvidiaArgs are nvidia-smi's arguments for a stream of readings every
// period of the GPUs devs (nil: all), with reasons the bitmask's field.
func NvidiaArgs(reasons string, period time.Duration, devs []int) []string {
	args := []string{"--query-gpu=" + strings.Join(append(append([]string(nil), nvidiaFields...), reasons), ","),
		"--format=csv,noheader,nounits"}
	if len(devs) > 0 {
		args = append(args, "--id="+joinInts(devs))
	}
	if period > 0 {
		args = append(args, "-lms", strconv.FormatInt(max(period.Milliseconds(), 1), 10))
	}
	return args
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, n := range v {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ",")
}

// nvidiaTime is the layout of nvidia-smi's timestamp field.
const nvidiaTime = "2006/01/02 15:04:05.000"

// ParseNvidiaLine reads one line of the query above: ten comma-separated
// cells without units; "[N/A]" and "[Not Supported]" cells are NaN. A
// timestamp that does not read (or local, which it is) keeps at.
func ParseNvidiaLine(line string, at time.Time) (Sample, error) {
	cells := strings.Split(line, ",")
	if len(cells) != len(nvidiaFields)+1 {
		return Sample{}, fmt.Errorf("%d cells, want %d (index, timestamp, power, clocks, temperature, utilisation, memory, reasons)", len(cells), len(nvidiaFields)+1)
	}
	idx, err := strconv.Atoi(strings.TrimSpace(cells[0]))
	if err != nil || idx < 0 || idx > 1<<16 {
		return Sample{}, fmt.Errorf("GPU index %q is not a number", strings.TrimSpace(cells[0]))
	}
	s := newSample(idx, at)
	if t, err := time.ParseInLocation(nvidiaTime, strings.TrimSpace(cells[1]), time.Local); err == nil {
		s.At = t
	}
	for i, dst := range []*float64{&s.PowerW, &s.SMClockMHz, &s.MemClkMHz, &s.TempC, &s.UtilPct, &s.MemUsedMiB, &s.MemTotMiB} {
		v, err := number(cells[2+i])
		if err != nil {
			return Sample{}, fmt.Errorf("%s: %w", nvidiaFields[2+i], err)
		}
		*dst = v
	}
	if r := strings.TrimSpace(cells[len(cells)-1]); !unavailable(r) {
		mask, err := strconv.ParseUint(strings.TrimPrefix(strings.ToLower(r), "0x"), 16, 64)
		if err != nil {
			return Sample{}, fmt.Errorf("clock reasons %q are not a hexadecimal bitmask", r)
		}
		s.Limits = nvidiaLimits(mask)
	}
	return s, nil
}

// ReadNvidia reads nvidia-smi's stream line by line as it comes, calling
// emit with each reading and bad with each line that does not read (its
// number and why); it returns when r ends. now stamps readings whose
// timestamp does not read.
func ReadNvidia(r io.Reader, now func() time.Time, emit func(Sample), bad func(line int, err error)) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 64<<10)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		s, err := ParseNvidiaLine(line, now())
		if err != nil {
			bad(n, err)
			continue
		}
		emit(s)
	}
	return sc.Err()
}
