#!/usr/bin/env bash
# Issue 61's read-ahead bound, as a player at its own pace meets it: ffmpeg -re plays from an
# origin paced at 512 KB/s (nginx /paced/), straight and through a fresh `serve`, alternating,
# N times (default 5) per case, for a 60 s 2 Mbit/s film as faststart and as moov-at-end:
#   watch  plays 3 s from the start;
#   seek   plays 3 s from 0:20;
#   jump   plays 3 s from the start, then (a second ffmpeg, the same proxy) 3 s from 0:40.
# nginx's log counts what the origin sent, 4 s after the player exited. Each run is within the
# bound when serve's bytes <= 1.15 x direct's + 10 s of the film (its size / 6). Prints each
# run and the worst ratio per case; exit 1 when a run is over the bound.
#
#   [N=5] [CASES="watch seek jump"] Tests/Benchmarks/paced-player.sh [MP4PROBE_BINARY]
set -euo pipefail
cd "$(dirname "$0")/../.."
. Tests/Benchmarks/nginx-origin.sh
bin=$(release_binary "$@")
dir=${MP4PROBE_BENCH_DIR:-/tmp/mp4bench}/paced-player
mkdir -p "$dir/www"
[ -f "$dir/www/fast.mp4" ] || ffmpeg -v error -nostdin -y -f lavfi -i testsrc2=size=1280x720:rate=25 -f lavfi -i sine=frequency=440 \
  -t 60 -c:v libx264 -preset veryfast -b:v 2M -maxrate 2M -bufsize 2M -g 50 -pix_fmt yuv420p -c:a aac -b:a 96k -movflags +faststart "$dir/www/fast.mp4"
[ -f "$dir/www/end.mp4" ] || ffmpeg -v error -nostdin -y -i "$dir/www/fast.mp4" -c copy "$dir/www/end.mp4"
log="$dir/access.log"
start_origin "$dir" "$dir/www" "$log"
trap 'stop_origin; [ -n "${serve_pid:-}" ] && kill "$serve_pid" 2>/dev/null || true' EXIT
# With KEEP_LOGS=1, each run's origin log is kept as $dir/log-FILM-CASE-RUN-{direct,serve}.
keep() { [ -z "${KEEP_LOGS:-}" ] || cp "$log" "$dir/log-$film-$case-$run-$1"; }
sent() { awk -F'|' '{s += $4} END {print s + 0}' "$log"; }
# play URL CASE: the player's requests for CASE from URL (through the proxy or not).
play() {
  case $2 in
    watch) ffmpeg -v error -nostdin -re -i "$1" -t 3 -f null - ;;
    seek) ffmpeg -v error -nostdin -re -ss 20 -i "$1" -t 3 -f null - ;;
    jump) ffmpeg -v error -nostdin -re -i "$1" -t 3 -f null -; ffmpeg -v error -nostdin -re -ss 40 -i "$1" -t 3 -f null - ;;
  esac
}
over=0
for film in fast end; do
  size=$(stat -c %s "$dir/www/$film.mp4")
  for case in ${CASES:-watch seek jump}; do
    worst=0
    for run in $(seq "${N:-5}"); do
      : > "$log"; play "$origin/paced/$film.mp4" "$case"; sleep 4; direct=$(sent); keep direct
      start_serve "$dir/cache" "$origin/paced/$film.mp4"
      : > "$log"; play "$serve_url" "$case"; sleep 4; proxied=$(sent); keep serve
      kill "$serve_pid"; wait "$serve_pid" 2>/dev/null || true; serve_pid=
      verdict=$(python3 -c "
d, s, size = $direct, $proxied, $size
bound = 1.15 * d + size / 6
print('%.2fx %s' % (s / max(d, 1), 'within' if s <= bound else 'OVER'))")
      echo "$film $case run $run: direct $direct B, through serve $proxied B, ${verdict% *} (bound $(python3 -c "print(int(1.15 * $direct + $size / 6))") B: ${verdict#* })"
      [ "${verdict#* }" = OVER ] && over=$((over + 1))
      worst=$(python3 -c "print(max($worst, $proxied / max($direct, 1)))")
    done
    printf '%s %s: worst %.2fx of direct\n' "$film" "$case" "$worst"
  done
done
echo "runs over the bound: $over"
[ "$over" = 0 ]
