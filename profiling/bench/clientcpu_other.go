//go:build !unix

package bench

import "time"

// clientCPU is unknown here (-1).
func clientCPU() time.Duration { return -1 }
