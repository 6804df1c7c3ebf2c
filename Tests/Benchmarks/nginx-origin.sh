# Sourced by the benchmark scripts: nginx as the origin, on 127.0.0.1 with a private
# configuration in DIR.
#
#   start_origin DIR ROOT [ACCESS_LOG]
#
# Serves ROOT on a free port with sendfile (and under /paced/ at 512 KB/s, a phone's pace, and
# /rate2m/ at 2 MB/s); with ACCESS_LOG, logs "uri|range|status|body bytes"
# per request there. Sets origin (http://127.0.0.1:PORT) and origin_pid_file; stop_origin stops it.
# With MP4PROBE_TLS_DIR (Tests/TLS/make-test-ca.sh DIR --trust), the same over HTTPS on a second
# port: origin_tls (https://127.0.0.1:PORT2); otherwise origin_tls is empty.
start_origin() {
  local dir=$1 root=$2 log=${3:-}
  local port logging="access_log off;"
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  local tls_server="" tls_port=""
  origin_tls=""
  if [ -n "${MP4PROBE_TLS_DIR:-}" ] && [ -s "$MP4PROBE_TLS_DIR/server.pem" ]; then
    tls_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
    tls_server="server { listen 127.0.0.1:$tls_port ssl; ssl_certificate $MP4PROBE_TLS_DIR/server.pem; ssl_certificate_key $MP4PROBE_TLS_DIR/server.key; root $root; location /paced/ { alias $root/; limit_rate 512k; } }"
  fi
  if [ -n "$log" ]; then
    : > "$log"
    logging="log_format bench '\$request_uri|\$http_range|\$status|\$body_bytes_sent'; access_log $log bench;"
  fi
  mkdir -p "$dir/tmp"
  origin_pid_file="$dir/origin-nginx.pid"
  cat > "$dir/origin-nginx.conf" <<CONF
daemon on;
pid $origin_pid_file;
error_log $dir/nginx-error.log;
worker_processes 1;
events { worker_connections 256; }
http {
  $logging
  client_body_temp_path $dir/tmp; proxy_temp_path $dir/tmp; fastcgi_temp_path $dir/tmp;
  uwsgi_temp_path $dir/tmp; scgi_temp_path $dir/tmp;
  sendfile on;
  server { listen 127.0.0.1:$port; root $root; location /paced/ { alias $root/; limit_rate 512k; } location /rate2m/ { alias $root/; limit_rate 2m; } }
  $tls_server
}
CONF
  nginx -c "$dir/origin-nginx.conf" -p "$dir"
  origin="http://127.0.0.1:$port"
  [ -n "$tls_port" ] && origin_tls="https://127.0.0.1:$tls_port"
  return 0
}

stop_origin() { kill "$(cat "$origin_pid_file")" 2>/dev/null || true; }

# The fragmented film of issue 43 in ROOT (made once): 10 minutes, 300 fragments of 2 s, no
# index (`-movflags frag_keyframe+empty_moov`, as live recorders and MediaRecorder write).
#
#   fragmented_film ROOT
fragmented_film() {
  [ -f "$1/frag600.mp4" ] || ffmpeg -v error -nostdin -y -f lavfi -i testsrc2=size=640x360:rate=25 -f lavfi -i sine=frequency=440 \
    -t 600 -c:v libx264 -preset ultrafast -b:v 800k -maxrate 800k -bufsize 1600k -g 50 -c:a aac -b:a 64k -movflags frag_keyframe+empty_moov "$1/frag600.mp4"
}

# The mp4probe a benchmark measures: BINARY when given, else the README's release build.
#
#   bin=$(release_binary [BINARY])
release_binary() {
  if [ $# -gt 0 ]; then echo "$1"; return; fi
  swift build -c release --product mp4probe >/dev/null
  echo "$PWD/.build/release/mp4probe"
}

# The set-up of the benchmarks of the fragmented film (fragmented-start.sh, request-timeline.sh):
# sets bin (release_binary) and dir (MP4PROBE_BENCH_DIR, /tmp/mp4bench by default) and makes the
# film in $dir/www.
#
#   fragmented_bench [BINARY]
fragmented_bench() {
  bin=$(release_binary "$@")
  dir=${MP4PROBE_BENCH_DIR:-/tmp/mp4bench}
  mkdir -p "$dir/www" "$dir/tmp"
  fragmented_film "$dir/www"
}

# Starts `serve` (with SERVE_ARGS) with a fresh cache in CACHE_DIR, waits for its base URL and sets serve_pid and
# serve_url (the proxy's URL of ORIGIN_URL).
#
#   start_serve CACHE_DIR ORIGIN_URL
start_serve() {
  rm -rf "$1"; rm -f "$1.out"
  "$bin" serve --cache "$1" ${SERVE_ARGS:-} > "$1.out" 2> /dev/null &
  serve_pid=$!
  for _ in $(seq 100); do [ -s "$1.out" ] && break; sleep 0.05; done
  serve_url=$(python3 -c 'import sys, urllib.parse; print(sys.argv[1] + "v.mp4?url=" + urllib.parse.quote(sys.argv[2], safe=""))' "$(head -n 1 "$1.out")" "$2")
}
