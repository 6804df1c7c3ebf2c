#!/usr/bin/env bash
# Issue 62's readers beside an in-place rewrite, as an outside tester tries them: TRIALS (300)
# times, `faststart --in-place` of a fresh copy of a 3 MB moov-at-end film, and `info` started
# 0-30 ms after it; then SLOW (3) readers slowed at every pread (strace, 0.4 s each) started
# 1.1 s before the rewrite. A reader is right when it prints what `info` prints of the film
# before or after the rewrite, or fails saying why (exit != 0); wrong when it exits 0 with
# anything else. Prints the counts; exit 1 when any reader was wrong.
#
#   [TRIALS=300] [SLOW=3] Tests/Benchmarks/readers-beside-rewrite.sh [MP4PROBE_BINARY]
set -euo pipefail
cd "$(dirname "$0")/../.."
bin=${1:-$PWD/.build/debug/mp4probe}
dir=${MP4PROBE_BENCH_DIR:-/tmp/mp4bench}/readers-beside-rewrite
mkdir -p "$dir"
[ -f "$dir/original.mp4" ] || ffmpeg -v error -nostdin -y -f lavfi -i testsrc2=size=640x360:rate=25 -f lavfi -i sine \
  -t 12 -c:v libx264 -preset ultrafast -b:v 2M -c:a aac "$dir/original.mp4"
film="$dir/film.mp4"
# What `info` prints of the film before and after the rewrite (the path is the same).
cp "$dir/original.mp4" "$film"; "$bin" info "$film" > "$dir/before.txt"
"$bin" faststart --in-place "$film" > /dev/null; "$bin" info "$film" > "$dir/after.txt"
right=0 failed=0 wrong=0
judge() {   # judge STATUS OUTPUT
  if [ "$1" != 0 ]; then failed=$((failed + 1))
  elif cmp -s "$2" "$dir/before.txt" || cmp -s "$2" "$dir/after.txt"; then right=$((right + 1))
  else wrong=$((wrong + 1)); echo "WRONG (exit 0): $(diff "$2" "$dir/before.txt" | grep -m 1 "^<" || true)"; fi
}
for trial in $(seq "${TRIALS:-300}"); do
  cp "$dir/original.mp4" "$film"
  "$bin" faststart --in-place "$film" > /dev/null 2>&1 &
  writer=$!
  sleep "0.0$(printf '%02d' $((RANDOM % 31)))"
  status=0; "$bin" info "$film" > "$dir/read.txt" 2>/dev/null || status=$?
  wait "$writer" || true
  judge "$status" "$dir/read.txt"
done
if command -v strace > /dev/null; then
  for slow in $(seq "${SLOW:-3}"); do
    cp "$dir/original.mp4" "$film"
    ( status=0; strace -f -qq -o /dev/null -e trace=pread64 -e inject=pread64:delay_enter=400000 "$bin" info "$film" > "$dir/slow$slow.txt" 2>/dev/null || status=$?; echo "$status" > "$dir/slow$slow.status" ) &
    reader=$!
    sleep 1.1
    "$bin" faststart --in-place "$film" > /dev/null 2>&1 || true
    wait "$reader"
    judge "$(cat "$dir/slow$slow.status")" "$dir/slow$slow.txt"
  done
fi
echo "readers: $right right, $failed failed saying why, $wrong wrong with exit 0"
[ "$wrong" = 0 ]
