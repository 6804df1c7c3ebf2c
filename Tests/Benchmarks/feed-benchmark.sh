#!/usr/bin/env bash
# Time to first frame in a feed (issue 33): headless Chromium sets a <video>'s src and the page
# logs when `canplay` fires, for a 10 s moov-at-end film (640x360 H.264, AAC) from nginx behind
# a phone's link (slow-link.py: 50 ms each way, so a request costs a 100 ms round trip, and
# 1 MB/s shared by every connection; MP4PROBE_FEED_DELAY_MS, MP4PROBE_FEED_RATE). Not a test:
# it prints medians side by side.
#   0. the film as a local file (file://): Chromium's own time, the floor of any network
#   1. straight from the origin
#   2. through `mp4probe serve`, not preloaded (a fresh cache)
#   3. through `mp4probe serve` after `POST _/preload` of 3 s (waited for with `_/status`)
# Goal: the preloaded film reaches canplay within 150 ms of getting its src.
# Then the bandwidth a playing film keeps: curl reads the whole film through serve, alone and
# while four other films are being preloaded (3 s each) over the same link.
#
#   Tests/Benchmarks/feed-benchmark.sh [MP4PROBE_BINARY]
#
# With no argument it builds and measures .build/release/mp4probe. Needs nginx, ffmpeg,
# chromium, curl, python3.
set -euo pipefail
cd "$(dirname "$0")/../.."
dir=${MP4PROBE_BENCH_DIR:-/tmp/mp4bench}
runs=${MP4PROBE_BENCH_RUNS:-5}
mkdir -p "$dir/feed"
if [ $# -eq 0 ]; then
  swift build -c release --product mp4probe >/dev/null
  set -- "$PWD/.build/release/mp4probe"
fi
bin=$1
chromium=$(command -v chromium || command -v chromium-browser || command -v google-chrome)
film="$dir/feed/film.mp4"
[ -f "$film" ] || ffmpeg -v error -nostdin -y -f lavfi -i testsrc2=size=640x360:rate=25 -f lavfi -i sine=frequency=440 \
  -t 10 -c:v libx264 -preset veryfast -b:v 1M -g 50 -pix_fmt yuv420p -c:a aac -b:a 96k "$film"

cat > "$dir/feed/page.html" <<'PAGE'
<!doctype html><html><body><video id=v muted playsinline preload=auto></video><script>
const v = document.getElementById('v');
const t0 = performance.now();
function log(what) { console.log('MP4PROBE ' + what + ' ' + Math.round(performance.now() - t0)); }
v.addEventListener('canplay', () => log('canplay'));
v.addEventListener('error', () => log('error' + (v.error ? v.error.code : '')));
v.src = new URLSearchParams(location.search).get('src');
</script></body></html>
PAGE

. Tests/Benchmarks/nginx-origin.sh
start_origin "$dir/feed" "$dir/feed" "$dir/feed/origin.log"
delay_ms=${MP4PROBE_FEED_DELAY_MS:-50}
rate=${MP4PROBE_FEED_RATE:-1000000}
python3 Tests/Benchmarks/slow-link.py 0 "${origin#http://}" --delay-ms "$delay_ms" --rate "$rate" > "$dir/feed/link.out" 2>/dev/null &
link_pid=$!
for _ in $(seq 1 100); do link_port=$(head -1 "$dir/feed/link.out" 2>/dev/null || true); [ -n "$link_port" ] && break; sleep 0.05; done
link="http://127.0.0.1:$link_port"
serve_pid=""
cleanup() { stop_origin; kill "$link_pid" 2>/dev/null || true; [ -n "$serve_pid" ] && kill "$serve_pid" 2>/dev/null || true; }
trap cleanup EXIT

encode() { python3 -c 'import sys, urllib.parse; print(urllib.parse.quote(sys.argv[1], safe=""))' "$1"; }

# Milliseconds from src to canplay in a fresh Chromium profile ("-" on error or timeout).
canplay() {
  local profile="$dir/feed/profile-$RANDOM" out="$dir/feed/chromium-$RANDOM.log"
  : > "$out"
  timeout 30 "$chromium" --headless=new --no-sandbox --disable-gpu --enable-logging=stderr --v=0 \
    --autoplay-policy=no-user-gesture-required --no-first-run --user-data-dir="$profile" \
    "file://$dir/feed/page.html?src=$(encode "$1")" > /dev/null 2> "$out" &
  local pid=$! ms="-"
  for _ in $(seq 1 300); do
    if grep -q "MP4PROBE \(canplay\|error\)" "$out" 2>/dev/null; then break; fi
    sleep 0.1
  done
  ms=$(grep -o "MP4PROBE canplay [0-9]*" "$out" | head -1 | awk '{print $3}')
  kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true
  rm -rf "$profile" "$out"
  echo "${ms:--}"
}

# Starts serve on a fresh cache; sets base.
start_serve() {
  rm -rf "$dir/feed/cache"
  "$bin" serve --cache "$dir/feed/cache" > "$dir/feed/serve.out" 2> "$dir/feed/serve.err" &
  serve_pid=$!
  for _ in $(seq 1 100); do base=$(grep -o 'http://[^ ]*/' "$dir/feed/serve.out" | head -1 || true); [ -n "$base" ] && break; sleep 0.05; done
}
stop_serve() { kill "$serve_pid" 2>/dev/null || true; wait "$serve_pid" 2>/dev/null || true; serve_pid=""; }

median() { tr ' ' '\n' | grep -v '^-*$' | sort -n | awk '{a[NR]=$1} END {if (NR == 0) print "-"; else print a[int((NR + 1) / 2)]}'; }

file_ms="" direct="" cold="" warm="" warm_origin=""
for run in $(seq 1 "$runs"); do
  marker="run=$run-$RANDOM"
  file_ms+=" $(canplay "file://$film")"
  direct+=" $(canplay "$link/film.mp4?$marker")"

  start_serve
  cold+=" $(canplay "${base}film.mp4?url=$(encode "$link/film.mp4?cold-$marker")")"
  stop_serve

  start_serve
  url="$link/film.mp4?warm-$marker"
  curl -s -o /dev/null -X POST -H 'Content-Type: application/json' --data "{\"urls\": [\"$url\"], \"seconds\": 3}" "${base}_/preload"
  for _ in $(seq 1 200); do
    status=$(curl -s "${base}_/status?url=$(encode "$url")")
    if python3 -c 'import json,sys; s=json.loads(sys.argv[1]); sys.exit(0 if not s["preloading"] and s["playableSeconds"] >= 3 else 1)' "$status" 2>/dev/null; then break; fi
    sleep 0.1
  done
  before=$(grep -c "warm-$marker" "$dir/feed/origin.log" || true)
  warm+=" $(canplay "${base}film.mp4?url=$(encode "$url")")"
  # The ranges the origin sent once the film was given to the player (its read-ahead past
  # the preloaded part; none of the preloaded bytes again).
  warm_origin+=" [$(grep "warm-$marker" "$dir/feed/origin.log" | tail -n +$((before + 1)) | awk -F'|' '{print $2}' | paste -sd, -)]"
  stop_serve
done

size=$(stat -c %s "$film")
echo "time to first frame (src to canplay), median of $runs; a $size-byte moov-at-end film, origin behind ${delay_ms} ms each way and $rate B/s shared"
printf '%-44s %10s   %s\n' "" "canplay ms" "runs"
printf '%-44s %10s   %s\n' "a local file (file://, no network)" "$(echo $file_ms | median)" "$file_ms"
printf '%-44s %10s   %s\n' "straight from the origin" "$(echo $direct | median)" "$direct"
printf '%-44s %10s   %s\n' "through serve, not preloaded" "$(echo $cold | median)" "$cold"
printf '%-44s %10s   %s\n' "through serve, 3 s preloaded" "$(echo $warm | median)" "$warm"
echo "origin requests once the preloaded film was given to the player: $warm_origin"

# The playing film's bandwidth, alone and with four preloads over the same link.
alone="" shared="" preload_bytes=""
for run in $(seq 1 "$runs"); do
  start_serve
  alone+=" $(curl -s -o /dev/null -w '%{time_total}' "${base}film.mp4?url=$(encode "$link/film.mp4?alone-$run-$RANDOM")")"
  stop_serve
  start_serve
  tag="$run-$RANDOM"
  body=$(python3 -c 'import json,sys; print(json.dumps({"urls": [sys.argv[1] + "/film.mp4?preload-%d-%s" % (i, sys.argv[2]) for i in range(4)], "seconds": 3}))' "$link" "$tag")
  curl -s -o /dev/null -X POST -H 'Content-Type: application/json' --data "$body" "${base}_/preload"
  shared+=" $(curl -s -o /dev/null -w '%{time_total}' "${base}film.mp4?url=$(encode "$link/film.mp4?playing-$tag")")"
  # What the preloads had taken when the film was in: they wait while it fetches.
  during=$(grep "preload-[0-3]-$tag" "$dir/feed/origin.log" | awk -F'|' '{s += $4} END {print s + 0}')
  preload_bytes+=" $during"
  stop_serve
done
echo "a playing film's whole read through serve ($size B), seconds, median of $runs:"
printf '%-44s %10s   %s\n' "alone" "$(echo $alone | median)" "$alone"
printf '%-44s %10s   %s\n' "while 4 films are preloaded (3 s each)" "$(echo $shared | median)" "$shared"
echo "origin bytes of the 4 preloads' completed requests when the playing film was in: $preload_bytes"
