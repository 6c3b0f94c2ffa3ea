package results

// ClientLoad is how busy the benchmark client itself was over a level, set
// against the server's own pace: a client that cannot read its streams as
// fast as the server writes them measures itself, not the server.
type ClientLoad struct {
	// CPUS is the client process's CPU time (user + system) over the
	// level, WallS the level's wall time, Cores the CPUs it may use;
	// CPUShare = CPUS / (WallS · Cores).
	CPUS     float64 `json:"cpu_s"`
	WallS    float64 `json:"wall_s"`
	Cores    int     `json:"cores"`
	CPUShare float64 `json:"cpu_share"`
	// BusyShare is the share of the streams' reading time (first read to
	// last) the client spent away from its reads — parsing, counting, or
	// starved of CPU — rather than waiting for the server's bytes: near 0
	// for a client that keeps up, near 1 for one that reads bytes the
	// server wrote long before. -1 when not measured (a transport that
	// cannot time its reads).
	BusyShare float64 `json:"busy_share"`
	// ClientTPOTMS is the client's mean TPOT (ms, wall clock);
	// ServerTPOTMS the server's own time per token of a sequence from
	// /metrics: the mean running requests times the level's duration over
	// the tokens it generated (Little's law); 0 when /metrics did not say.
	ClientTPOTMS float64 `json:"client_tpot_ms"`
	ServerTPOTMS float64 `json:"server_tpot_ms,omitempty"`
	// Bound: the client's TPOT is well above the server's and the client
	// spent most of its streams' time away from its reads.
	Bound bool `json:"client_bound"`
}
