#!/usr/bin/env python3
"""Compares two run directories of the same seeded simulated sweep, made by
two builds of profile-model, file by file.

The simulated engine runs against the wall clock, so two runs with the same
seed batch their requests differently: every time, count and share varies
between runs, and with them the order of rows sorted by time, the sentences
the report picks from the numbers, the ticks of the charts, and whether a
short level was sampled on /metrics. What does not vary is compared:

  file list       the same files (timestamps in names masked)
  run.json        every field but start, end, url, ports, paths, trace names
  conc{N}.json    every key; strings, and the counts set by the seed
                  (completed, total_input_tokens, total_output_tokens,
                  num_prompts, ...); the gauges sampled from /metrics excepted
  *_layer.csv     header and the kernel at every position, in order
  other CSVs      header and the rows with numbers masked, as a multiset
  analysis.json   keys and strings, with numbers masked, lists and
                  histograms (keyed by a measured value) as multisets, lists
                  of numbers as one value (their length follows the timing)
  bench.txt       header lines, benchmark names and the set of units of each
  readme.md       its section headings, in order
  *.svg           the set of its labels, numbers masked (titles, axes, legend)
  server.log      every line with numbers masked
  traces          the set of event categories and of kernel names, numbers
                  masked (step annotations name batches the timing decides)

Run it on two runs of the same binary first: every file must compare equal,
or the rules above are too strict.

  scripts/compare-runs.py RUN_DIR_A RUN_DIR_B
"""
import csv
import gzip
import io
import json
import os
import re
import sys
from collections import Counter

NUM = re.compile(r"-?\d+(\.\d+)?([eE][-+]?\d+)?")
RUN_NAME = re.compile(r"[A-Za-z0-9._-]*-\d{8}T\d{6}Z(-\d+)?")
STAMP = re.compile(r"_ts_\d{8}_\d{6}_\d{3}")
LIST = re.compile(r"N(, ?N)+")
# Fields of run.json and conc{N}.json that differ between any two runs.
VARYING = {"start", "end", "url", "command", "date", "base_url", "gauges"}


def mask(s, roots):
    for r in roots:
        s = s.replace(r, "RUN")
    s = STAMP.sub("_ts_STAMP", s)
    s = RUN_NAME.sub("RUNDIR", s)
    return LIST.sub("N", NUM.sub("N", s))  # a list of numbers varies in length too


def json_shape(v, roots, keep_numbers):
    """A comparable form: dict keys kept, strings masked, numbers masked
    unless keep_numbers, lists of objects as sorted multisets."""
    if isinstance(v, dict) and v and all(NUM.fullmatch(k) for k in v) and not keep_numbers:
        return json_shape(list(v.values()), roots, keep_numbers)  # a histogram keyed by a measured value
    if isinstance(v, dict):
        return {k: ("varies" if k in VARYING else json_shape(x, roots, keep_numbers)) for k, x in v.items()}
    if isinstance(v, list) and not keep_numbers and all(isinstance(x, (int, float)) for x in v):
        return "numbers"  # per-step or per-batch figures: their count follows the timing too
    if isinstance(v, list):
        items = [json_shape(x, roots, keep_numbers) for x in v]
        if keep_numbers:
            return items
        return sorted(json.dumps(x, sort_keys=True) for x in items)
    if isinstance(v, str):
        return mask(v, roots)
    if isinstance(v, (int, float)) and not isinstance(v, bool) and not keep_numbers:
        return "N"
    return v


# Level-result keys whose numbers the seed fixes (the rest are timings).
SEEDED = {"schema_version", "num_prompts", "max_concurrency", "completed", "failed", "not_sent",
          "total_input_tokens", "total_output_tokens", "random_input_len", "random_output_len",
          "random_range_ratio", "num_prompts_mul", "num_warmups", "seed", "decode_bs"}


def level_result(path, roots):
    doc = json.load(open(path))
    return {k: (v if k in SEEDED else json_shape(v, roots, False)) for k, v in doc.items()}


def run_info(path, roots):
    doc = json.load(open(path))
    return json_shape(doc, roots, True)


def rows(path):
    return list(csv.reader(open(path, newline="")))


def layer_csv(path, roots):
    rs = rows(path)
    return [rs[0]] + [[mask(c, roots) if not NUM.fullmatch(c) else "N" for c in r] for r in rs[1:]]


def other_csv(path, roots):
    rs = rows(path)
    body = Counter(tuple("N" if c == "" or NUM.fullmatch(c) else mask(c, roots) for c in r) for r in rs[1:])
    return rs[0], sorted(body.items())


def bench_txt(path, roots):
    out = []
    for line in open(path):
        if line.startswith("Benchmark"):
            f = line.split()
            out.append((mask(f[0], roots), tuple(sorted(f[3::2]))))
        else:
            out.append(mask(line.strip(), roots))
    return sorted(map(str, out))


def readme(path, roots):
    return [mask(l.rstrip(), roots) for l in open(path) if l.startswith("#")]


def svg(path, roots):
    texts = re.findall(r">([^<>]*)</text>", open(path).read())
    return sorted({mask(t.strip(), roots) for t in texts if t.strip()})


def lines(path, roots):
    return [mask(l.rstrip(), roots) for l in open(path)]


def trace(path, roots):
    with gzip.open(path) as f:
        doc = json.load(io.TextIOWrapper(f, encoding="utf-8"))
    events = doc.get("traceEvents", [])
    # Step annotations name the batch each step ran, which the timing decides.
    kernels = {mask(e.get("name", ""), roots) for e in events if e.get("cat") == "kernel"}
    return sorted({e.get("cat", "") for e in events}), sorted(kernels)


def rule(rel):
    base = os.path.basename(rel)
    if base == "run.json":
        return "run.json", run_info
    if re.fullmatch(r"conc\d+\.json", base):
        return "level result", level_result
    if base.endswith("layer.csv"):
        return "layer table", layer_csv
    if base.endswith(".csv"):
        return "table", other_csv
    if base.endswith(".json"):
        return "analysis", lambda p, r: json_shape(json.load(open(p)), r, False)
    if base == "bench.txt":
        return "benchmarks", bench_txt
    if base == "readme.md":
        return "report", readme
    if base.endswith(".svg"):
        return "chart", svg
    if base.endswith(".trace.json.gz"):
        return "trace", trace
    return "text", lines


def files(d):
    out = {}
    for root, _, names in os.walk(d):
        for n in names:
            rel = os.path.relpath(os.path.join(root, n), d)
            out[STAMP.sub("_ts_STAMP", rel)] = rel
    return out


def main():
    a, b = (os.path.abspath(x) for x in sys.argv[1:3])
    # The run directories, their parents (--out) and the parents' parents
    # (where each build ran) are masked wherever they appear.
    roots = sorted({x for d in (a, b) for x in (d, os.path.dirname(d), os.path.dirname(os.path.dirname(d)))},
                   key=len, reverse=True)
    fa, fb = files(a), files(b)
    same = differ = 0
    for key in sorted(set(fa) | set(fb)):
        if key not in fa or key not in fb:
            print(f"DIFFER  {key}: only in {'B' if key in fb else 'A'}")
            differ += 1
            continue
        name, f = rule(key)
        ra, rb = f(os.path.join(a, fa[key]), roots), f(os.path.join(b, fb[key]), roots)
        if ra == rb:
            print(f"same    {key} ({name})")
            same += 1
        else:
            print(f"DIFFER  {key} ({name})")
            sa, sb = json.dumps(ra, indent=1, default=str).splitlines(), json.dumps(rb, indent=1, default=str).splitlines()
            shown = 0
            for i, (x, y) in enumerate(zip(sa, sb)):
                if x != y and shown < 6:
                    print(f"   A: {x.strip()[:160]}\n   B: {y.strip()[:160]}")
                    shown += 1
            differ += 1
    print(f"== run directory: {same} files compare equal, {differ} differ")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
