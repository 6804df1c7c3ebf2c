#!/usr/bin/env bash
# Issue 43's fragmented start, sampled: ffmpeg decodes the first 2 s of a 10-minute film of 300
# fragments without an index (`-movflags frag_keyframe+empty_moov`) from nginx's `/paced/`
# (512 KB/s), straight and through a fresh `serve`, alternating, N times (default 9). Prints
# each pair, then the medians, their ratio, `serve`'s CPU (user + system) during ffmpeg's run
# and what the origin sent through it. Not a test: on a noisy machine one median of 3
# (https-benchmark.sh) moves by a third from run to run.
#
#   [N=9] [SCHEME=https MP4PROBE_TLS_DIR=...] Tests/Benchmarks/fragmented-start.sh [MP4PROBE_BINARY]
set -euo pipefail
cd "$(dirname "$0")/../.."
. Tests/Benchmarks/nginx-origin.sh
fragmented_bench "$@"
log="$dir/fragmented-access.log"
start_origin "$dir" "$dir/www" "$log"
trap 'stop_origin' EXIT
o=$origin
if [ "${SCHEME:-http}" = https ]; then
  [ -n "$origin_tls" ] || { echo "MP4PROBE_TLS_DIR is not set: no HTTPS origin"; exit 1; }
  o=$origin_tls
fi
now() { date +%s.%N; }
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
hz=$(getconf CLK_TCK)
results=()
for _ in $(seq "${N:-9}"); do
  s=$(now); ffmpeg -v error -nostdin -i "$o/paced/frag600.mp4" -t 2 -f null -; e=$(now); sleep 0.3
  start_serve "$dir/fragmented-cache" "$o/paced/frag600.mp4"
  pid=$serve_pid url=$serve_url
  c0=$(ticks "$pid"); : > "$log"
  s2=$(now); ffmpeg -v error -nostdin -i "$url" -t 2 -f null -; e2=$(now)
  c1=$(ticks "$pid")
  kill "$pid"; wait "$pid" 2>/dev/null || true
  sent=$(awk -F'|' '{s += $4} END {print s + 0}' "$log")
  line=$(python3 -c "print('%.3f %.3f %.2f %d' % ($e - $s, $e2 - $s2, ($c1 - $c0) / $hz, $sent))")
  echo "direct ${line%% *} s  serve $(echo "$line" | cut -d' ' -f2) s  cpu $(echo "$line" | cut -d' ' -f3) s  origin $(echo "$line" | cut -d' ' -f4) B"
  results+=("$line")
done
printf '%s\n' "${results[@]}" | python3 -c '
import sys, statistics
rows = [list(map(float, l.split())) for l in sys.stdin if l.strip()]
d, s, c, b = (statistics.median(r[i] for r in rows) for i in range(4))
print("medians of %d: direct %.3f s, through serve %.3f s, %.2fx; serve CPU %.2f s; origin %.1f MiB (most %.1f MiB)" % (len(rows), d, s, s / d, c, b / 1048576, max(r[3] for r in rows) / 1048576))'
