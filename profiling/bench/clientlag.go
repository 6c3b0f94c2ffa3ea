package bench

import (
	"fmt"
	"slices"
	"time"

	"github.com/profile-model/profile-model/internal/diag"
)

// lagShareBound is the share of its streams' time a level may lose to the
// client's own lag (Output.SendLag: requests handed to the transport after
// they were due, because the machine running bench was too busy to send
// them) before it is warned about: past it the server saw less load than
// was asked for, and latencies look better than the server's. A ramp of a
// few milliseconds while a thousand streams start is well under it.
const lagShareBound = 0.05

// lagFloor is the mean send lag below which no level is warned about,
// whatever its share: microseconds of lag on requests of microseconds
// (a server that answers at once) distort nothing that matters.
const lagFloor = time.Millisecond

// lagShare is the share of the successful requests' stream time (send lag
// plus end-to-end latency) that was send lag.
func lagShare(outs []output) float64 {
	share, _ := lagFigures(outs)
	return share
}

// lagFigures are lagShare and the mean send lag of the successful
// requests.
func lagFigures(outs []output) (share float64, mean time.Duration) {
	var lag, busy time.Duration
	n := 0
	for i := range outs {
		if o := &outs[i]; o.OK() {
			lag += o.SendLag
			busy += o.SendLag + o.E2EL
			n++
		}
	}
	if busy <= 0 {
		return 0, 0
	}
	return float64(lag) / float64(busy), lag / time.Duration(n)
}

// lagP99 is the 99th percentile (nearest rank below) of the send lags of
// the requests that were sent.
func lagP99(outs []output) time.Duration {
	lags := make([]time.Duration, 0, len(outs))
	for i := range outs {
		if !outs[i].Start.IsZero() {
			lags = append(lags, outs[i].SendLag)
		}
	}
	if len(lags) == 0 {
		return 0
	}
	slices.Sort(lags)
	return lags[(len(lags)-1)*99/100]
}

// lagWarning is the client_lag warning of a level's outputs, when their
// send lag took more than bound of their streams' time (and more than
// lagFloor on average).
func lagWarning(outs []output, bound float64) (diag.Warning, bool) {
	share, mean := lagFigures(outs)
	if share <= bound || mean <= lagFloor {
		return diag.Warning{}, false
	}
	return diag.New(diag.ClientLag, fmt.Sprintf(
		"the client could not keep up: its streams spent %.1f%% of their time waiting for it to send (bound %.0f%%; send lag p99 %v): the server saw less load than asked for, so latencies may look better than they are; run bench on a less loaded machine, or lower the concurrency or --request-rate",
		100*share, 100*bound, lagP99(outs).Round(time.Microsecond))), true
}
