#!/usr/bin/env python3
"""Measure what the GPU this runs on achieves: dense BF16 and FP8 GEMM
throughput and device-memory copy bandwidth, with PyTorch.

Prints one JSON object on stdout (the fields the roofline's peaks file
needs; inventory/roofline turns it into a peaks line, see
docs/roofline.md). Exits 3 with a line starting "skip:" on stderr when
PyTorch or a GPU is absent, so a caller can say why nothing was measured.

Each figure is the best of --repeats timings of --iters back-to-back runs
between two device events, after a warm-up: an achievable ceiling, not an
average.
"""

import argparse
import json
import sys

SKIP = 3  # exit status: nothing to measure here


def timed(torch, fn, iters, repeats):
    """Seconds per call of fn: the best of repeats timings."""
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    best = float("inf")
    for _ in range(repeats):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(iters):
            fn()
        end.record()
        torch.cuda.synchronize()
        best = min(best, start.elapsed_time(end) / 1e3 / iters)
    return best


def bf16_tflops(torch, n, iters, repeats):
    a = torch.randn(n, n, dtype=torch.bfloat16, device="cuda")
    b = torch.randn(n, n, dtype=torch.bfloat16, device="cuda")
    out = torch.empty(n, n, dtype=torch.bfloat16, device="cuda")
    sec = timed(torch, lambda: torch.mm(a, b, out=out), iters, repeats)
    return 2 * n**3 / sec / 1e12


def fp8_type(torch):
    """The FP8 (e4m3) type the GPU's matrix units take: MI300-series
    (gfx94x) use the fnuz variant, every other GPU the OCP one."""
    arch = getattr(torch.cuda.get_device_properties(0), "gcnArchName", "")
    if torch.version.hip and arch.startswith("gfx94"):
        return torch.float8_e4m3fnuz
    return torch.float8_e4m3fn


def fp8_tflops(torch, n, iters, repeats):
    """FP8 GEMM throughput through torch._scaled_mm, or 0 and why not."""
    if not hasattr(torch, "_scaled_mm"):
        return 0.0, "this PyTorch has no torch._scaled_mm"
    try:
        dt = fp8_type(torch)
        a = torch.randn(n, n, device="cuda").to(dt)
        b = torch.randn(n, n, device="cuda").to(dt).t()  # column-major, as _scaled_mm wants
        one = torch.tensor(1.0, device="cuda")

        def mm():
            return torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)

        mm()
        sec = timed(torch, mm, iters, repeats)
    except (RuntimeError, TypeError, AttributeError) as e:
        return 0.0, "FP8 GEMM not run: %s" % str(e).splitlines()[0]
    return 2 * n**3 / sec / 1e12, ""


def copy_tbs(torch, mib, iters, repeats):
    """Device-to-device copy: each byte read once and written once."""
    n = mib << 20
    src = torch.empty(n, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    sec = timed(torch, lambda: dst.copy_(src), iters, repeats)
    return 2 * n / sec / 1e12


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=8192, help="GEMM size N (N×N by N×N)")
    ap.add_argument("--copy-mib", type=int, default=2048, help="bytes copied per call, MiB")
    ap.add_argument("--iters", type=int, default=20, help="calls per timing")
    ap.add_argument("--repeats", type=int, default=5, help="timings; the best is kept")
    ap.add_argument("--check", action="store_true", help="only say whether there is something to measure")
    args = ap.parse_args()
    try:
        import torch
    except ImportError:
        print("skip: PyTorch (torch) is not installed for %s" % sys.executable, file=sys.stderr)
        return SKIP
    if not torch.cuda.is_available():
        print("skip: PyTorch %s sees no GPU" % torch.__version__, file=sys.stderr)
        return SKIP
    device = torch.cuda.get_device_name(0)
    if args.check:
        print(json.dumps({"device": device}))
        return 0
    fp8, fp8_note = fp8_tflops(torch, args.size, args.iters, args.repeats)
    out = {
        "device": device,
        "bf16_tflops": round(bf16_tflops(torch, args.size, args.iters, args.repeats), 1),
        "fp8_tflops": round(fp8, 1),
        "fp8_note": fp8_note,
        "hbm_tbs": round(copy_tbs(torch, args.copy_mib, args.iters, args.repeats), 3),
        "memory_gb": round(torch.cuda.get_device_properties(0).total_memory / 1e9, 1),
        "torch": torch.__version__,
        "gemm_size": args.size,
        "copy_mib": args.copy_mib,
    }
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
