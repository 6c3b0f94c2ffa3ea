#!/usr/bin/env bash
# The main job on the built-in default, no GPU: start the simulated ATOM
# engine with the profiler on, run a profiled concurrency sweep against it,
# then analyse every captured trace. Results land in demo-out/<time>/.
set -euo pipefail
cd "$(dirname "$0")/.."
pm=${PM:-bin/profile-model}
model=${MODEL:-MiniMaxAI/MiniMax-M2.5}
conc=${CONC:-4,8,16}
scale=${TIME_SCALE:-1}  # 1: real time, so latencies read like a real run

out=demo-out/$(date -u +%Y%m%d-%H%M%S)
mkdir -p "$out"
traces=$out/traces

# A free port: ask the kernel for one.
port=$(go run ./scripts/freeport 2>/dev/null || echo 18000)

echo "== simulated ATOM engine on port $port (time scale ${scale}x), log in $out/server.log"
"$pm" serve-sim --model "$model" --server-port "$port" --torch-profiler-dir "$traces" \
  --time-scale "$scale" --max-num-seqs 64 >"$out/server.log" 2>&1 &
server=$!
trap 'kill -TERM $server 2>/dev/null; wait $server 2>/dev/null || true' EXIT

# GET /health with bash alone (a fresh machine may have no curl).
healthy() {
  { exec 3<>"/dev/tcp/127.0.0.1/$port"; } 2>/dev/null || return 1
  printf 'GET /health HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n' >&3
  local status; read -r status <&3 || true; exec 3>&-
  [[ $status == *" 200 "* ]]
}
for _ in $(seq 1 100); do
  healthy && break
  kill -0 $server 2>/dev/null || { echo "serve-sim exited:"; tail -n 40 "$out/server.log"; exit 1; }
  sleep 0.1
done
healthy || { echo "serve-sim not ready after 10 s:"; tail -n 40 "$out/server.log"; exit 1; }

echo "== profiled sweep: concurrency $conc, ISL 1024, OSL 50"
"$pm" bench --url "http://127.0.0.1:$port" --isl 1024 --osl 50 --conc "$conc" \
  --num-prompts-mul 4 --profile --trace-dir "$traces" --out "$out/bench"

echo "== analysis of each trace"
find "$traces" -name '*.pt.trace.json.gz' | sort | while read -r t; do
  dir=$out/analysis/$(basename "$t" .pt.trace.json.gz)
  mkdir -p "$dir"
  echo "-- $t"
  "$pm" inspect "$t" | tee "$dir/inspect.txt"
  "$pm" layers "$t" --csv "$dir/layer.csv" >"$dir/layers.txt"
  "$pm" layers "$t" --mode compat --csv "$dir/compat_layer.csv" >/dev/null
  "$pm" kernels "$t" --csv "$dir/kernels.csv" >"$dir/kernels.txt"
  head -n 25 "$dir/layers.txt"
done
echo "== done: $out"
ls -R "$out" | head -n 60
