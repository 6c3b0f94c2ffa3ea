package tracing

import (
	"bytes"

	"github.com/profile-model/profile-model/internal/jsonscan"
)

// What the Scanner keeps: the category of an event decides, with its
// phase and (for runtime calls and cpu ops) its name.

// class is what the Scanner does with an event of a category.
type class uint8

const (
	clSkip class = iota
	clKernel
	clMemcpy
	clMemset
	clRuntime
	clAnnotation
	clGPUAnnotation
	clOp // cpu_op / Operator: ProfilerStep#N, and the ops that launch (ops.go)
	// clPython: python_function, kept only for the engine's step
	// functions (stepfunc.go).
	clPython
)

func classify(cat []byte) class {
	switch string(cat) {
	case "kernel", "Kernel":
		return clKernel
	case "gpu_memcpy", "Memcpy":
		return clMemcpy
	case "gpu_memset", "Memset":
		return clMemset
	case "cuda_runtime", "cuda_driver", "Runtime", "hip_runtime", "hip_api":
		return clRuntime
	case "user_annotation":
		return clAnnotation
	case "gpu_user_annotation":
		return clGPUAnnotation
	case "cpu_op", "Operator":
		return clOp
	case "python_function":
		return clPython
	}
	return clSkip
}

var profilerStep = []byte("ProfilerStep#")

// phComplete is the phase of a complete event ("X"), the one kept for
// kernels.
var phComplete = []byte("X")

// The keys Kineto writes first, as literals (compared in place, they
// compile to word loads).
const (
	phKey  = `"ph": "`
	catKey = `"cat": "`
)

// kinetoPhase matches {"ph": " at the start of an event and returns the
// index of the phase letter (followed by its closing quote), or 0.
func kinetoPhase(b []byte) int {
	j := jsonscan.SkipSpace(b, 1)
	if len(b)-j < len(phKey)+2 || string(b[j:j+len(phKey)]) != phKey || b[j+len(phKey)+1] != '"' {
		return 0
	}
	return j + len(phKey)
}

// kinetoCat matches the start Kineto writes, compact or indented:
// {"ph": "X", "cat": " and returns the index of the phase letter and of
// the category's first byte, or zeros.
func kinetoCat(b []byte) (ph, cat int) {
	j := kinetoPhase(b)
	if j == 0 || j+3 > len(b) || b[j+2] != ',' {
		return 0, 0
	}
	k := j + 3
	if k < len(b) && b[k] == ' ' {
		k++ // the usual single space, before the general skip
	}
	k = jsonscan.SkipSpace(b, k)
	if len(b)-k < len(catKey) || string(b[k:k+len(catKey)]) != catKey {
		return 0, 0
	}
	return j, k + len(catKey)
}

// isLaunch tells runtime calls that put work on the GPU.
func isLaunch(name []byte) (launch, graph bool) {
	if bytes.Contains(name, []byte("GraphLaunch")) {
		return true, true
	}
	return bytes.Contains(name, []byte("Launch")) || bytes.Contains(name, []byte("Memcpy")) || bytes.Contains(name, []byte("Memset")), false
}

// keep decides from cat, ph and name; decided is false while a needed field
// is still unknown.
func keep(cl class, ph, name []byte, havePh, haveName, ops bool) (kept, decided bool) {
	switch cl {
	case clSkip:
		return false, true
	case clKernel, clMemcpy, clMemset:
		if !havePh {
			return false, false
		}
		return string(ph) == "X", true
	case clRuntime:
		if !haveName {
			return false, false
		}
		l, _ := isLaunch(name)
		return l, true
	case clOp:
		if ops {
			return true, true
		}
		if !haveName {
			return false, false
		}
		return bytes.HasPrefix(name, profilerStep) || isStepFunction(name), true
	case clPython:
		if !haveName {
			return false, false
		}
		return isStepFunction(name), true
	}
	return true, true
}
