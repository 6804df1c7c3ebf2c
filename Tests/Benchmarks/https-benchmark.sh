#!/usr/bin/env bash
# The path users take (issue 43): each serving measure over plain HTTP and over HTTPS, in the
# same run, against the same nginx. Not a test: it prints ratios.
#
#   MP4PROBE_TLS_DIR=/tmp/mp4probe-tls Tests/Benchmarks/https-benchmark.sh [MP4PROBE_BINARY]
#
# (Tests/TLS/make-test-ca.sh /tmp/mp4probe-tls --trust makes the CA and trusts it; root.)
#   1. A player's start: ffmpeg decodes the first 5 s of a 60 s 1.5 Mbit/s film (moov first)
#      from the origin paced at 512 KB/s, straight and through a fresh `serve`; median of 3.
#   2. A fragmented film's start: ffmpeg decodes the first 2 s of a 10-minute film written with
#      `-movflags frag_keyframe+empty_moov` (300 fragments, no index), paced origin; median of
#      3, and what the origin sent through `serve` by the time ffmpeg exited.
#   3. `fetch --all` of a 1 GiB file into a fresh cache, against `curl -o FILE && sync`;
#      peak RSS (GNU time). Median of 3.
#   4. A player that leaves: ffmpeg -re plays 3 s from the paced origin, straight and through
#      `serve --prefetch 0`; what the origin sent in all, 6 s after it exited.
set -euo pipefail
cd "$(dirname "$0")/../.."
dir=${MP4PROBE_BENCH_DIR:-/tmp/mp4bench}
mkdir -p "$dir/www" "$dir/tmp"
. Tests/Benchmarks/nginx-origin.sh
bin=$(release_binary "$@")
[ -f "$dir/www/film60.mp4" ] || ffmpeg -v error -nostdin -y -f lavfi -i testsrc2=size=640x360:rate=25 -f lavfi -i sine=frequency=440 \
  -t 60 -c:v libx264 -preset ultrafast -b:v 1400k -maxrate 1500k -bufsize 3000k -g 50 -c:a aac -b:a 96k -movflags +faststart "$dir/www/film60.mp4"
[ -f "$dir/www/1g.bin" ] || head -c $((1 << 30)) /dev/urandom > "$dir/www/1g.bin"

fragmented_film "$dir/www"
log="$dir/https-access.log"
start_origin "$dir" "$dir/www" "$log"
trap 'stop_origin' EXIT
[ -n "$origin_tls" ] || { echo "MP4PROBE_TLS_DIR is not set: no HTTPS origin (see the header)"; exit 1; }

origin_bytes() { awk -F'|' '{s+=$4} END {print s+0}' "$log"; }
now() { date +%s.%N; }
median() { python3 -c 'import sys, statistics; print("%.2f" % statistics.median(float(x) for x in sys.argv[1:]))' "$@"; }
serve_start() {   # [serve options...]
  rm -rf "$dir/https-cache"; rm -f "$dir/https-serve.out"
  "$bin" serve --cache "$dir/https-cache" "$@" > "$dir/https-serve.out" 2> "$dir/https-serve.err" &
  serve_pid=$!
  for _ in $(seq 100); do [ -s "$dir/https-serve.out" ] && break; sleep 0.05; done
  base=$(head -n 1 "$dir/https-serve.out")
}
serve_stop() { kill "$serve_pid" 2>/dev/null; wait "$serve_pid" 2>/dev/null || true; }
via() { python3 -c 'import sys, urllib.parse; print(sys.argv[1] + "v.mp4?url=" + urllib.parse.quote(sys.argv[2], safe=""))' "$base" "$1"; }
decode() { local s e; s=$(now); ffmpeg -v error -nostdin -i "$1" -t "$2" -f null - ; e=$(now); python3 -c "print($e - $s)"; }

printf '%-44s %-6s %10s %10s %7s %s\n' "measure" "scheme" "direct" "serve" "ratio" "notes"
for scheme in http https; do
  o=$origin; [ "$scheme" = https ] && o=$origin_tls
  # 1. A player's start.
  d=(); p=()
  for _ in 1 2 3; do
    d+=("$(decode "$o/paced/film60.mp4" 5)")
    serve_start; p+=("$(decode "$(via "$o/paced/film60.mp4")" 5)"); serve_stop
  done
  md=$(median "${d[@]}"); mp=$(median "${p[@]}")
  printf '%-44s %-6s %9ss %9ss %6sx\n' "first 5 s of a 60 s film, 512 KB/s" "$scheme" "$md" "$mp" "$(python3 -c "print('%.2f' % ($mp / $md))")"
  # 2. A fragmented film's start.
  d=(); p=(); bytes=(); dbytes=()
  for _ in 1 2 3; do
    : > "$log"; d+=("$(decode "$o/paced/frag600.mp4" 2)"); sleep 0.5; dbytes+=("$(origin_bytes)")
    serve_start; : > "$log"; p+=("$(decode "$(via "$o/paced/frag600.mp4")" 2)"); serve_stop; bytes+=("$(origin_bytes)")
  done
  md=$(median "${d[@]}"); mp=$(median "${p[@]}")
  printf '%-44s %-6s %9ss %9ss %6sx %s\n' "first 2 s of a 300-fragment film, 512 KB/s" "$scheme" "$md" "$mp" "$(python3 -c "print('%.2f' % ($mp / $md))")" \
    "origin sent $(python3 -c "print('%.1f' % ($(median "${dbytes[@]}") / 1048576))") MiB direct, $(python3 -c "print('%.1f' % ($(median "${bytes[@]}") / 1048576))") MiB through serve"
  # 3. fetch --all of 1 GiB against curl -o FILE && sync.
  d=(); p=(); rss=()
  for _ in 1 2 3; do
    rm -f "$dir/curl.out"; s=$(now); curl -s -o "$dir/curl.out" "$o/1g.bin"; sync; e=$(now); d+=("$(python3 -c "print($e - $s)")")
    rm -rf "$dir/fetch-cache"; s=$(now)
    /usr/bin/time -f '%M' -o "$dir/time.out" "$bin" fetch --cache "$dir/fetch-cache" --all "$o/1g.bin" > /dev/null 2>&1
    e=$(now); p+=("$(python3 -c "print($e - $s)")"); rss+=("$(cat "$dir/time.out")")
  done
  rm -f "$dir/curl.out"; rm -rf "$dir/fetch-cache"
  md=$(median "${d[@]}"); mp=$(median "${p[@]}")
  printf '%-44s %-6s %9ss %9ss %6sx %s\n' "fetch --all 1 GiB (direct: curl -o + sync)" "$scheme" "$md" "$mp" "$(python3 -c "print('%.2f' % ($mp / $md))")" \
    "peak RSS $(python3 -c "print('%.0f' % ($(median "${rss[@]}") / 1024))") MiB"
  # 4. A player that leaves (without the seek-aware prefetch, which is asked for and finishes
  #    its window: serving.md): what the origin sent in all, direct and through `serve`, 6 s
  #    after the player exited (nginx logs a request when it ends, so only totals compare).
  : > "$log"; ffmpeg -v error -nostdin -re -i "$o/paced/film60.mp4" -t 3 -f null - || true; sleep 6; direct_total=$(origin_bytes)
  serve_start --prefetch 0; : > "$log"
  ffmpeg -v error -nostdin -re -i "$(via "$o/paced/film60.mp4")" -t 3 -f null - || true
  sleep 6; serve_stop; proxy_total=$(origin_bytes)
  printf '%-44s %-6s %9sB %9sB %6sx %s\n' "a player plays 3 s (-re) and leaves" "$scheme" "$direct_total" "$proxy_total" "$(python3 -c "print('%.2f' % ($proxy_total / max($direct_total, 1)))")" "origin bytes in all"
done
