#!/usr/bin/env python3
"""The baseline any Python trace tool pays: json.load of a (gzip) Kineto trace
and one loop over its events, summing kernel time by name. scripts/time-trace.sh
--python times `profile-model layers --mode compat` against it."""
import collections, gzip, json, sys

path = sys.argv[1]
with (gzip.open if path.endswith(".gz") else open)(path, "rt") as f:
    trace = json.load(f)
total = collections.defaultdict(float)
count = collections.Counter()
for ev in trace["traceEvents"]:
    if ev.get("ph") == "X" and ev.get("cat") in ("kernel", "Kernel"):
        total[ev["name"]] += ev.get("dur", 0)
        count[ev["name"]] += 1
print(f"{sum(count.values())} kernels, {len(count)} distinct, {sum(total.values()):.3f} us")
