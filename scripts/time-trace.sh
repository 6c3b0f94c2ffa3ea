#!/usr/bin/env bash
# Times the trace analysis against the floor, as whole processes under
# /usr/bin/time: plain klauspost gzip decompression of TRACE (the
# tracing package's TestGunzipTime), then `inspect --json`, `layers` and
# `kernels` of each profile-model binary given, in interleaved rounds so
# that a busy machine slows every command alike. Prints the median wall
# time, CPU time (user + system) and peak RSS of each, and the ratios the
# speed targets are stated in.
#
#   scripts/time-trace.sh [-n ROUNDS] [--python] TRACE.json.gz [BINARY...]
#
# BINARY defaults to bin/profile-model (built first); give an old and a new
# binary to compare them in the same run. --python also times
# `layers --mode compat` against scripts/reference_loop.py (json.load and a
# loop over the events, the baseline any Python tool pays) on TRACE.
# Make a large trace with: profile-model synth --target-mb 1000 --out /tmp/big.json.gz
set -euo pipefail
cd "$(dirname "$0")/.."

rounds=5
python=0
while [[ $# -gt 0 ]]; do
  case $1 in
    -n) rounds=$2; shift 2 ;;
    --python) python=1; shift ;;
    -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
    *) break ;;
  esac
done
[[ $# -ge 1 ]] || { sed -n '2,17p' "$0"; exit 2; }
trace=$1; shift
[[ -f $trace ]] || { echo "no trace $trace" >&2; exit 2; }
[[ -x /usr/bin/time ]] || { echo "needs /usr/bin/time (GNU time: apt-get install time)" >&2; exit 2; }
bins=("$@")
if [[ ${#bins[@]} -eq 0 ]]; then
  make -s build
  bins=(bin/profile-model)
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go test -c -o "$tmp/tracing.test" ./tracing
results=$tmp/results  # lines: label wall_s cpu_s rss_kb
# Absolute paths: the commands run in a scratch directory (they write files).
abs() { case $1 in /*) echo "$1" ;; */*) echo "$PWD/$1" ;; *) command -v "$1" ;; esac; }
trace=$(abs "$trace")
for i in "${!bins[@]}"; do bins[$i]=$(abs "${bins[$i]}"); done
ref=$PWD/scripts/reference_loop.py
mkdir "$tmp/work"
cd "$tmp/work"

# run LABEL CMD...: one timed run, its output discarded.
run() {
  local label=$1; shift
  /usr/bin/time -f "%e %U %S %M" -o "$tmp/t" "$@" >/dev/null 2>"$tmp/err" || {
    echo "failed: $*" >&2; cat "$tmp/err" >&2; exit 1; }
  awk -v l="$label" '{printf "%s %s %.2f %s\n", l, $1, $2 + $3, $4}' "$tmp/t" >>"$results"
}

echo "machine: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg) at start" >&2
for r in $(seq 1 "$rounds"); do
  echo "round $r/$rounds" >&2
  PROFILE_MODEL_GUNZIP=$trace run gunzip "$tmp/tracing.test" -test.run '^TestGunzipTime$' -test.count 1
  for i in "${!bins[@]}"; do
    b=${bins[$i]}
    tag=$i:$(basename "$b")
    run "$tag:inspect" "$b" inspect --json "$trace"
    run "$tag:layers" "$b" layers "$trace" --csv -
    run "$tag:kernels" "$b" kernels "$trace" --csv -
    if [[ $python -eq 1 ]]; then
      run "$tag:layers-compat" "$b" layers "$trace" --mode compat --csv -
    fi
  done
  if [[ $python -eq 1 ]]; then
    run python-reference python3 "$ref" "$trace"
  fi
done
echo "machine: load average $(cut -d' ' -f1-3 /proc/loadavg) at end" >&2

# Medians per label, then the ratios.
awk '
  { n[$1]++; w[$1, n[$1]] = $2; c[$1, n[$1]] = $3; m[$1, n[$1]] = $4; if (!($1 in seen)) { seen[$1] = 1; order[++k] = $1 } }
  function median(a, l, cnt,   i, j, t, v) {
    for (i = 1; i <= cnt; i++) v[i] = a[l, i]
    for (i = 1; i <= cnt; i++) for (j = i + 1; j <= cnt; j++) if (v[j] < v[i]) { t = v[i]; v[i] = v[j]; v[j] = t }
    return cnt % 2 ? v[(cnt + 1) / 2] : (v[cnt / 2] + v[cnt / 2 + 1]) / 2
  }
  END {
    printf "%-32s %8s %8s %9s %9s\n", "command (median of " n[order[1]] ")", "wall s", "cpu s", "peak MB", "wall/gz"
    g = median(w, "gunzip", n["gunzip"])
    for (i = 1; i <= k; i++) {
      l = order[i]
      mw[l] = median(w, l, n[l]); mc[l] = median(c, l, n[l]); mm[l] = median(m, l, n[l]) / 1024
      printf "%-32s %8.2f %8.2f %9.1f %9.2f\n", l, mw[l], mc[l], mm[l], mw[l] / g
    }
    for (i = 1; i <= k; i++) {
      l = order[i]
      if (l ~ /:inspect$/) {
        p = substr(l, 1, length(l) - 8)
        printf "%s: layers/inspect %.2f, kernels/inspect %.2f (wall)\n", p, mw[p ":layers"] / mw[l], mw[p ":kernels"] / mw[l]
      }
      if (l ~ /:layers-compat$/ && ("python-reference" in mw)) {
        printf "%s vs python-reference: %.1fx faster (wall), %.1fx less memory\n", l, mw["python-reference"] / mw[l], mm["python-reference"] / mm[l]
      }
    }
  }' "$results"
