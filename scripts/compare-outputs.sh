#!/usr/bin/env bash
# Runs two builds of profile-model on the same inputs and compares their
# outputs. Used to show that a restructuring changed no result.
#
#   scripts/compare-outputs.sh OLD_BIN NEW_BIN TRACE...
#   scripts/compare-outputs.sh --sim OLD_BIN NEW_BIN [TRACE...]
#
# On each trace, every output byte for byte: inspect (text and --json),
# layers (robust and compat: text, --json, CSVs) and kernels (text, --json,
# CSVs). Prints one line per trace and file, and the diff of what differs.
#
# --sim also runs a short seeded sweep on the simulated engine (run --engine
# sim: two levels, 4 and 8, at the modelled GPU's own speed so that a busy
# machine disturbs it less) with OLD_BIN twice and NEW_BIN once, and
# compares the run directories with scripts/compare-runs.py: OLD against
# OLD first, which shows what its rules let vary between two runs of the
# same build (nothing may differ there), then OLD against NEW. The
# simulated engine runs against the wall clock, so timings, and what
# follows from them, are masked; compare-runs.py says what is compared.
set -uo pipefail
sim=0
if [ "${1:-}" = --sim ]; then sim=1; shift; fi
here=$(cd "$(dirname "$0")" && pwd)
old=$(realpath "$1") new=$(realpath "$2"); shift 2
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
same=0 differ=0
for trace in "$@"; do
  t=$(realpath "$trace")
  for bin in old new; do
    exe=$old; [ $bin = new ] && exe=$new
    d=$work/$bin/$(basename "$trace"); mkdir -p "$d"
    ( cd "$d" || exit
      "$exe" inspect "$t" >inspect.txt 2>&1
      "$exe" inspect --json "$t" >inspect.json 2>&1
      "$exe" layers "$t" --csv layer.csv >layers.txt 2>&1
      "$exe" layers "$t" --csv json-layer.csv --json >layers.json 2>&1
      "$exe" layers "$t" --mode compat --csv compat.csv >compat.txt 2>&1
      "$exe" kernels "$t" --csv kernels.csv >kernels.txt 2>&1
      "$exe" kernels "$t" --csv json-kernels.csv --json >kernels.json 2>&1 )
  done
  a=$work/old/$(basename "$trace") b=$work/new/$(basename "$trace")
  for f in $(cd "$a" && ls; cd "$b" && ls); do echo "$f"; done | sort -u | while read -r f; do
    if cmp -s "$a/$f" "$b/$f"; then echo "same    $(basename "$trace") $f"
    else echo "DIFFER  $(basename "$trace") $f"; diff <(head -c 20000 "$a/$f") <(head -c 20000 "$b/$f") | head -n 12; fi
  done
done | tee "$work/report"
[ $# -gt 0 ] && echo "== $(grep -c '^same' "$work/report") files identical, $(grep -c '^DIFFER' "$work/report") differ"
[ $sim = 1 ] || exit 0

# The seeded sweep, each build in a folder of its own with the same --out,
# so that paths inside the run directories read alike.
sweep() { # LABEL BIN
  local d=$work/sim-$1
  mkdir -p "$d/bin" && cp "$2" "$d/bin/profile-model"
  ( cd "$d" && ./bin/profile-model run --engine sim --model MiniMaxAI/MiniMax-M2.5 --max-num-seqs 64 \
      --config "$here/../fixtures/models/minimax-m2/config.json" --conc 4,8 --isl 256 --osl 16 \
      --num-prompts-mul 2 --time-scale 1 --seed 7 --out out >run.log 2>&1 ) ||
    { echo "run --engine sim failed with $2:"; tail -20 "$d/run.log"; exit 1; }
  echo "$d/out/"*
}
a1=$(sweep old "$old") || { echo "$a1"; exit 1; }
a2=$(sweep old-again "$old") || { echo "$a2"; exit 1; }
b=$(sweep new "$new") || { echo "$b"; exit 1; }
echo "== sim sweep: OLD against OLD (what may vary between two runs of one build)"
"$here/compare-runs.py" "$a1" "$a2"; base=$?
echo "== sim sweep: OLD against NEW"
"$here/compare-runs.py" "$a1" "$b"; cmpd=$?
exit $((base | cmpd))
