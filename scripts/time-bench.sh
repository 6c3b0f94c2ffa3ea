#!/usr/bin/env bash
# Times the benchmark client as a whole process under /usr/bin/time: one
# level of `bench` against `serve-sim` (fast time scale), for each
# profile-model binary given, in interleaved rounds. Prints the median wall
# time, CPU time (user + system), CPU per output token and peak RSS of the
# client. The server is the first binary's serve-sim, started once.
#
#   scripts/time-bench.sh [-n ROUNDS] [--conc N] [--prompts N] [--isl N] [--osl N] [BINARY...]
#
# Defaults: 3 rounds, concurrency 1024, 8192 prompts of 1024 tokens, 128
# output tokens each; BINARY defaults to bin/profile-model (built first).
set -euo pipefail
cd "$(dirname "$0")/.."

rounds=3 conc=1024 prompts=8192 isl=1024 osl=128
while [[ $# -gt 0 ]]; do
  case $1 in
    -n) rounds=$2; shift 2 ;;
    --conc) conc=$2; shift 2 ;;
    --prompts) prompts=$2; shift 2 ;;
    --isl) isl=$2; shift 2 ;;
    --osl) osl=$2; shift 2 ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    *) break ;;
  esac
done
[[ -x /usr/bin/time ]] || { echo "needs /usr/bin/time (GNU time: apt-get install time)" >&2; exit 2; }
(( prompts % conc == 0 )) || { echo "--prompts must be a multiple of --conc" >&2; exit 2; }
bins=("$@")
if [[ ${#bins[@]} -eq 0 ]]; then
  make -s build
  bins=(bin/profile-model)
fi
for i in "${!bins[@]}"; do
  case ${bins[$i]} in /*) ;; *) bins[$i]=$PWD/${bins[$i]} ;; esac
done

tmp=$(mktemp -d)
port=$(go run ./scripts/freeport 2>/dev/null || echo 18931)
"${bins[0]}" serve-sim --model sim --server-port "$port" --time-scale 100 \
  --max-num-seqs "$conc" >"$tmp/server.log" 2>&1 &
server=$!
trap 'kill -TERM $server 2>/dev/null; wait $server 2>/dev/null || true; rm -rf "$tmp"' EXIT
for _ in $(seq 1 100); do
  { exec 3<>"/dev/tcp/127.0.0.1/$port"; } 2>/dev/null && { exec 3>&-; break; }
  sleep 0.1
done

results=$tmp/results  # lines: label wall_s cpu_s rss_kb tokens
echo "machine: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg) at start" >&2
for r in $(seq 1 "$rounds"); do
  echo "round $r/$rounds" >&2
  for i in "${!bins[@]}"; do
    out=$tmp/out-$r-$i
    /usr/bin/time -f "%e %U %S %M" -o "$tmp/t" "${bins[$i]}" bench --url "http://127.0.0.1:$port" --model sim \
      --isl "$isl" --osl "$osl" --conc "$conc" --num-prompts-mul $((prompts / conc)) --tokenizer none \
      --out "$out" >"$tmp/log" 2>&1 || { echo "bench failed:" >&2; tail -20 "$tmp/log" >&2; exit 1; }
    tokens=$(grep -ho '"total_output_tokens": *[0-9]*' "$out"/*/conc"$conc".json | grep -o '[0-9]*$')
    awk -v l="$i:$(basename "${bins[$i]}")" -v t="$tokens" '{printf "%s %s %.2f %s %s\n", l, $1, $2 + $3, $4, t}' "$tmp/t" >>"$results"
  done
done
echo "machine: load average $(cut -d' ' -f1-3 /proc/loadavg) at end" >&2

awk '
  { n[$1]++; w[$1, n[$1]] = $2; c[$1, n[$1]] = $3; m[$1, n[$1]] = $4; u[$1, n[$1]] = 1e6 * $3 / $5
    if (!($1 in seen)) { seen[$1] = 1; order[++k] = $1 } }
  function median(a, l, cnt,   i, j, t, v) {
    for (i = 1; i <= cnt; i++) v[i] = a[l, i]
    for (i = 1; i <= cnt; i++) for (j = i + 1; j <= cnt; j++) if (v[j] < v[i]) { t = v[i]; v[i] = v[j]; v[j] = t }
    return cnt % 2 ? v[(cnt + 1) / 2] : (v[cnt / 2] + v[cnt / 2 + 1]) / 2
  }
  END {
    printf "%-24s %8s %8s %12s %9s\n", "client (median of " n[order[1]] ")", "wall s", "cpu s", "cpu us/tok", "peak MB"
    for (i = 1; i <= k; i++) {
      l = order[i]
      printf "%-24s %8.2f %8.2f %12.2f %9.1f\n", l, median(w, l, n[l]), median(c, l, n[l]), median(u, l, n[l]), median(m, l, n[l]) / 1024
    }
  }' "$results"
