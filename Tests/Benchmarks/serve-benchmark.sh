#!/usr/bin/env bash
# `mp4probe serve` against nginx serving the same files directly, in the same run (issue 16).
# Not a test: it prints a table of medians and ratios.
#
#   Tests/Benchmarks/serve-benchmark.sh [MP4PROBE_BINARY]
#
# With no argument it builds and measures .build/release/mp4probe.
#   1. Throughput of cached reads: `curl` of a 256 MB file through the proxy (its cache filled
#      first) against `curl` of the same file from nginx. Goal: at least 0.8x nginx.
#   2. Latency of a small range (`-r 1000-1999`, a player's probe) through the proxy against
#      nginx: what the proxy adds.
#   3. Origin bytes for a seek into an uncached region of the two-hour film (long.mp4, 41 MB,
#      7.4 MB moov at the end, made by seek-benchmark.sh if missing): ffmpeg decodes 2 s from
#      1:00:00 through a fresh proxy; nginx's log counts what the origin sent. Goal: the moov +
#      the window + the prefetch, not the file. Also ffmpeg straight from nginx.
#   4. Uncached reads: `curl` of the 256 MB file through the proxy, a fresh cache entry each
#      run (fetched, written to the cache and handed on), and the whole time of an uncached
#      1,000-byte range, against nginx.
#   5. A player that leaves: ffmpeg -re plays 3 s of a 60 s 2 Mbit/s film from an origin paced
#      at 512 KB/s, through the proxy and straight from nginx; nginx's log counts what the
#      origin sent, 6 s after the player exited.
# Needs nginx, curl, hyperfine, ffmpeg, python3 (apt-get install -y nginx-light curl hyperfine ffmpeg).
set -euo pipefail
cd "$(dirname "$0")/../.."
dir=${MP4PROBE_BENCH_DIR:-/tmp/mp4bench}
runs=${MP4PROBE_BENCH_RUNS:-10}
mkdir -p "$dir/www" "$dir/tmp"
if [ $# -eq 0 ]; then
  swift build -c release --product mp4probe >/dev/null
  set -- "$PWD/.build/release/mp4probe"
fi
bin=$1
[ -f "$dir/long.mp4" ] || Tests/Benchmarks/seek-benchmark.sh >/dev/null   # makes long.mp4
[ -f "$dir/www/256m.bin" ] || head -c $((256 << 20)) /dev/urandom > "$dir/www/256m.bin"
[ -f "$dir/www/film720.mp4" ] || ffmpeg -v error -nostdin -y -f lavfi -i testsrc=size=1280x720:rate=25 -f lavfi -i sine=frequency=440 \
  -t 60 -c:v libx264 -preset veryfast -b:v 2M -g 50 -pix_fmt yuv420p -c:a aac -b:a 96k -movflags +faststart "$dir/www/film720.mp4"
ln -sf "$dir/long.mp4" "$dir/www/long.mp4"

. Tests/Benchmarks/nginx-origin.sh
log="$dir/serve-access.log"
start_origin "$dir" "$dir/www" "$log"
cache="$dir/serve-cache"
rm -rf "$cache"
"$bin" serve --cache "$cache" > "$dir/serve.out" 2> "$dir/serve.err" &
proxy_pid=$!
trap 'kill "$proxy_pid" 2>/dev/null || true; stop_origin' EXIT
for _ in $(seq 100); do [ -s "$dir/serve.out" ] && break; sleep 0.05; done
base=$(head -n 1 "$dir/serve.out")
via() { python3 -c 'import sys, urllib.parse; print(sys.argv[1] + sys.argv[2] + "?url=" + urllib.parse.quote(sys.argv[3], safe=""))' "$base" "$1" "$2"; }

results="$dir/serve-results.tsv"
: > "$results"
median() {   # name runs command... -> appends "name median_s"
  local name=$1 count=$2; shift 2
  hyperfine -N --warmup 2 --runs "$count" --export-json "$dir/h.json" "$*" >/dev/null 2>&1
  printf '%s\t%s\n' "$name" "$(python3 -c "import json; print(json.load(open('$dir/h.json'))['results'][0]['median'])")" | tee -a "$results" >&2
}

# 1 and 2: cached reads.
big=$(via big.bin "$origin/256m.bin")
curl -s -o /dev/null "$big"                        # fills the cache
curl -s "$big" | cmp - "$dir/www/256m.bin" || { echo "the proxy's bytes differ from the file" >&2; exit 1; }
median "nginx 256m" "$runs" curl -s -o /dev/null "$origin/256m.bin"
median "proxy 256m" "$runs" curl -s -o /dev/null "$big"
median "nginx range" $((runs * 10)) curl -s -o /dev/null -r 1000-1999 "$origin/256m.bin"
median "proxy range" $((runs * 10)) curl -s -o /dev/null -r 1000-1999 "$big"

# 4: uncached reads, a fresh URL (a fresh cache entry) per run.
fresh_prefix=$(via big.bin "$origin/256m.bin?fresh=")
median_fresh() {   # name runs url-prefix curl-arguments...
  local name=$1 count=$2 prefix=$3; shift 3
  hyperfine -N --runs 1 --parameter-scan n 1 "$count" --export-json "$dir/h.json" "curl -s -o /dev/null $* ${prefix}{n}x$RANDOM" >/dev/null 2>&1
  printf '%s\t%s\n' "$name" "$(python3 -c "import json, statistics; print(statistics.median(r['median'] for r in json.load(open('$dir/h.json'))['results']))")" | tee -a "$results" >&2
}
median_fresh "proxy 256m uncached" 5 "$fresh_prefix"
median_fresh "proxy range uncached" $((runs * 2)) "$fresh_prefix" -r 1000-1999

# 3: a seek into an uncached region of the two-hour film (a fresh URL: a fresh cache entry).
length=$(stat -L -c %s "$dir/long.mp4")
moov=$("$bin" boxes "$dir/long.mp4" --json | python3 -c '
import json, sys
boxes = json.load(sys.stdin)
boxes = boxes.get("boxes", boxes) if isinstance(boxes, dict) else boxes
print(next(b["size"] for b in boxes if b["type"] == "moov"))')
window=$("$bin" seek "$dir/long.mp4" 3600 --duration 12 --json | python3 -c 'import json, sys; print(json.load(sys.stdin)["byteCount"])')
sum_log() { python3 -c '
import sys
total = 0; count = 0
for line in open(sys.argv[1]):
    fields = line.rstrip("\n").split("|")
    if len(fields) == 4 and sys.argv[2] in fields[0]:
        total += int(fields[3]); count += 1
print(total, count)' "$log" "$1"; }
ffmpeg -v error -nostdin -ss 3600 -i "$origin/long.mp4?direct=1" -t 2 -f null - 
sleep 1
read -r direct_bytes direct_requests < <(sum_log "direct=1")
ffmpeg -v error -nostdin -ss 3600 -i "$(via long.mp4 "$origin/long.mp4?seek=1")" -t 2 -f null -
sleep 3   # prefetches finish
read -r seek_bytes seek_requests < <(sum_log "seek=1")
# A player that asks bounded ranges (as AVPlayer does): the head, the moov, 64 KiB at 1:00:00.
start=$("$bin" seek "$dir/long.mp4" 3600 --json | python3 -c 'import json, sys; print(json.load(sys.stdin)["startOffset"])')
bounded=$(via long.mp4 "$origin/long.mp4?bounded=1")
curl -s -o /dev/null -r 0-65535 "$bounded"
curl -s -o /dev/null -r "$((length - moov))-" "$bounded"
curl -s -o /dev/null -r "$start-$((start + 65535))" "$bounded"
sleep 3
read -r bounded_bytes bounded_requests < <(sum_log "bounded=1")

# 5: a player that leaves after 3 s, at its own pace, from a paced origin.
ffmpeg -v error -nostdin -re -i "$(via film.mp4 "$origin/paced/film720.mp4?leave=1")" -t 3 -f null -
sleep 6
read -r leave_bytes leave_requests < <(sum_log "leave=1")
ffmpeg -v error -nostdin -re -i "$origin/paced/film720.mp4?leavedirect=1" -t 3 -f null -
sleep 6
read -r leave_direct leave_direct_requests < <(sum_log "leavedirect=1")

python3 - "$results" "$length" "$moov" "$window" "$direct_bytes" "$direct_requests" "$seek_bytes" "$seek_requests" "$bounded_bytes" "$bounded_requests" \
  "$leave_direct" "$leave_direct_requests" "$leave_bytes" "$leave_requests" <<'PY'
import sys
rows = {}
for line in open(sys.argv[1]):
    name, median = line.rstrip("\n").split("\t")
    rows[name] = float(median)
length, moov, window, direct, direct_n, seek, seek_n, bounded, bounded_n, leave_d, leave_d_n, leave, leave_n = map(int, sys.argv[2:15])
size = 256 << 20
n, p = rows["nginx 256m"], rows["proxy 256m"]
print()
print("| measure | nginx direct | through `mp4probe serve` | ratio |")
print("|---|---|---|---|")
print(f"| cached read of 256 MB (curl) | {n*1000:.0f} ms, {size/n/1e6:.0f} MB/s | {p*1000:.0f} ms, {size/p/1e6:.0f} MB/s | {n/p:.2f}x nginx's throughput (goal >= 0.8x) |")
nr, pr = rows["nginx range"], rows["proxy range"]
print(f"| 1,000-byte range (curl, whole request) | {nr*1000:.2f} ms | {pr*1000:.2f} ms | +{(pr-nr)*1000:.2f} ms |")
print(f"| origin bytes, ffmpeg decoding 2 s at 1:00:00 of long.mp4 ({length:,} B, moov {moov:,} B) | {direct:,} B in {direct_n} requests (ffmpeg alone) | {seek:,} B in {seek_n} requests | {seek/length:.1%} of the file |")
u, ur = rows["proxy 256m uncached"], rows["proxy range uncached"]
print(f"| uncached read of 256 MB (curl, a fresh entry per run) | {n*1000:.0f} ms | {u*1000:.0f} ms, {size/u/1e6:.0f} MB/s | {n/u:.2f}x nginx's throughput |")
print(f"| uncached 1,000-byte range (curl, whole request) | {nr*1000:.2f} ms | {ur*1000:.2f} ms | +{(ur-nr)*1000:.2f} ms |")
print(f"| origin bytes, ffmpeg -re playing 3 s of a 2 Mbit/s film (origin at 512 KB/s), counted 6 s after it left | {leave_d:,} B in {leave_d_n} requests | {leave:,} B in {leave_n} requests | {leave/max(leave_d,1):.2f}x |")
print(f"| origin bytes, bounded reads: head, moov, 64 KiB at 1:00:00 (moov + 64 KiB x 2 + 12 s window = {moov + 131072 + window:,} B) | | {bounded:,} B in {bounded_n} requests | {bounded/length:.1%} of the file |")
PY
