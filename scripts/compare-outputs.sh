#!/usr/bin/env bash
# Runs two builds of profile-model on the same traces and compares every
# output byte for byte: inspect (text and --json), layers (robust and compat:
# text, --json, CSVs) and kernels (text, --json, CSVs). Used to show that a
# restructuring changed no result.
#
#   scripts/compare-outputs.sh OLD_BIN NEW_BIN TRACE...
#
# Prints one line per trace and command, and the diff of what differs.
set -uo pipefail
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
echo "== $(grep -c '^same' "$work/report") files identical, $(grep -c '^DIFFER' "$work/report") differ"
