#!/usr/bin/env bash
# Issue 66's first frames on an emulated phone link (../shared/tools/phonelink, root): nginx
# over TLS in the origin's namespace, `serve` and ffmpeg in the phone's. For each clip (720p
# H.264, 20 s, faststart and moov-at-end), N alternating pairs (default 5): ffmpeg's first frame
# straight from the origin, then through a fresh `serve` (a clip the proxy has not seen).
# Prints each pair's times and ratio, and the median ratio per clip; with PRELOAD=1 also a
# preloaded start (POST _/preload of 3 s, then the player). PLAYER=chromium measures headless
# Chromium instead: the first frame's requestVideoFrameCallback, from the page's start.
#
#   [PROFILE=4g|bad] [N=5] [PRELOAD=1] [PLAYER=ffmpeg|chromium] Tests/Benchmarks/phone-link.sh [MP4PROBE_BINARY]
set -euo pipefail
cd "$(dirname "$0")/../.."
. Tests/Benchmarks/nginx-origin.sh
phonelink=${PHONELINK:-$PWD/../shared/tools/phonelink/phonelink.sh}
if [ ! -x "$phonelink" ] || [ "$(id -u)" != 0 ]; then echo "phone-link: needs root and $phonelink; skipped"; exit 0; fi
tls=${MP4PROBE_TLS_DIR:-/tmp/mp4probe-tls}
openssl x509 -noout -text -in "$tls/server.pem" 2>/dev/null | grep -q "IP Address:10.233.0.1" || {
  echo "phone-link: $tls/server.pem does not name 10.233.0.1 (Tests/TLS/make-test-ca.sh makes one that does)"; exit 1; }
bin=$(release_binary "$@")
dir=${MP4PROBE_BENCH_DIR:-/tmp/mp4bench}/phone-link
mkdir -p "$dir/www" "$dir/tmp"
[ -f "$dir/www/fast.mp4" ] || ffmpeg -v error -nostdin -y -f lavfi -i testsrc2=size=1280x720:rate=30 -f lavfi -i sine=frequency=440 \
  -t 20 -c:v libx264 -preset veryfast -b:v 2500k -maxrate 2500k -bufsize 5M -g 60 -pix_fmt yuv420p -c:a aac -b:a 128k -movflags +faststart "$dir/www/fast.mp4"
[ -f "$dir/www/end.mp4" ] || ffmpeg -v error -nostdin -y -i "$dir/www/fast.mp4" -c copy "$dir/www/end.mp4"
cat > "$dir/nginx.conf" <<CONF
daemon on;
pid $dir/nginx.pid;
error_log $dir/nginx-error.log;
worker_processes 1;
events { worker_connections 256; }
http {
  log_format bench '\$request_uri|\$http_range|\$status|\$body_bytes_sent|\$msec|\$request_time';
  access_log $dir/access.log bench;
  client_body_temp_path $dir/tmp; proxy_temp_path $dir/tmp; fastcgi_temp_path $dir/tmp; uwsgi_temp_path $dir/tmp; scgi_temp_path $dir/tmp;
  sendfile on;
  server { listen 10.233.0.1:8443 ssl; ssl_certificate $tls/server.pem; ssl_certificate_key $tls/server.key; root $dir/www; }
}
CONF
"$phonelink" up "${PROFILE:-4g}" >/dev/null
ip netns exec plO nginx -c "$dir/nginx.conf" -p "$dir"
trap 'kill "$(cat "$dir/nginx.pid")" 2>/dev/null || true; [ -n "${serve_pid:-}" ] && kill "$serve_pid" 2>/dev/null; "$phonelink" down >/dev/null || true' EXIT
origin=https://10.233.0.1:8443
cat > "$dir/first-frame.html" <<'PAGE'
<!doctype html><video id="v" muted autoplay playsinline></video>
<script>
const v = document.getElementById("v");
v.requestVideoFrameCallback(() => console.log("MP4PROBE first-frame " + (performance.now() / 1000).toFixed(3)));
v.onerror = () => console.log("MP4PROBE first-frame error");
v.src = new URLSearchParams(location.search).get("src");
</script>
PAGE
# first_frame URL: seconds to the player's first video frame: ffmpeg's (process start
# included), or Chromium's (from its page's start; at most 30 s).
first_frame() {
  if [ "${PLAYER:-ffmpeg}" = chromium ]; then
    rm -rf "$dir/profile"
    local src
    src=$(python3 -c 'import sys, urllib.parse; print(urllib.parse.quote(sys.argv[1], safe=""))' "$1")
    timeout 30 ip netns exec plC chromium --headless=new --no-sandbox --disable-gpu --enable-logging=stderr --v=0 \
      --autoplay-policy=no-user-gesture-required --no-first-run --ignore-certificate-errors --user-data-dir="$dir/profile" \
      "file://$dir/first-frame.html?src=$src" 2>&1 >/dev/null | grep -m1 -o "MP4PROBE first-frame [0-9.a-z]*" | awk '{print $3}' || true
    pkill -f "user-data-dir=$dir/profile" 2>/dev/null || true
    return
  fi
  local started ended
  started=$(date +%s.%N)
  ip netns exec plC ffmpeg -v error -nostdin -i "$1" -map 0:v:0 -frames:v 1 -f null - </dev/null
  ended=$(date +%s.%N)
  python3 -c "print('%.3f' % ($ended - $started))"
}
serve_start() {
  rm -rf "$dir/cache"; rm -f "$dir/serve.out"
  ip netns exec plC ${SERVE_WRAP:-} "$bin" serve --cache "$dir/cache" --ca-file "$tls/ca.pem" ${SERVE_ARGS:-} > "$dir/serve.out" 2>"$dir/serve.err" &
  serve_pid=$!
  for _ in $(seq 100); do [ -s "$dir/serve.out" ] && break; sleep 0.05; done
  base=$(head -n 1 "$dir/serve.out")
}
serve_stop() { kill "$serve_pid"; wait "$serve_pid" 2>/dev/null || true; serve_pid=; }
proxied() { python3 -c 'import sys, urllib.parse; print(sys.argv[1] + "v.mp4?url=" + urllib.parse.quote(sys.argv[2], safe=""))' "$base" "$1"; }
# preload URL: POST _/preload of 3 s, then waits until _/status says it is done (at most 30 s).
preload() {
  ip netns exec plC curl -s -X POST -d "{\"urls\": [\"$1\"], \"seconds\": 3}" "${base}_/preload" >/dev/null
  local status
  status="${base}_/status?url=$(python3 -c 'import sys, urllib.parse; print(urllib.parse.quote(sys.argv[1], safe=""))' "$1")"
  for _ in $(seq 300); do
    ip netns exec plC curl -s "$status" | python3 -c 'import json, sys; s = json.load(sys.stdin); sys.exit(0 if not s["preloading"] and s["playableSeconds"] >= 3 else 1)' && return
    sleep 0.1
  done
}
median() { python3 -c "import statistics, sys; print('%.2f' % statistics.median(float(x) for x in sys.argv[1:]))" "$@"; }
first_frame "$origin/fast.mp4" >/dev/null   # the link, nginx and the page cache warm
for film in fast end; do
  ratios=(); preloaded=()
  for run in $(seq "${N:-5}"); do
    direct=$(first_frame "$origin/$film.mp4")
    serve_start
    cold=$(first_frame "$(proxied "$origin/$film.mp4")")
    serve_stop
    ratio=$(python3 -c "print('%.2f' % ($cold / $direct))")
    ratios+=("$ratio")
    line="$film run $run: direct ${direct} s, through a fresh serve ${cold} s (${ratio}x)"
    if [ -n "${PRELOAD:-}" ]; then
      serve_start
      preload "$origin/$film.mp4"
      warm=$(first_frame "$(proxied "$origin/$film.mp4")")
      serve_stop
      preloaded+=("$(python3 -c "print('%.2f' % ($warm / $direct))")")
      line="$line, preloaded ${warm} s (${preloaded[-1]}x)"
    fi
    echo "$line"
  done
  echo "$film: median per-pair ratio, fresh serve / direct: $(median "${ratios[@]}")x${PRELOAD:+; preloaded / direct: $(median "${preloaded[@]}")x}"
done
