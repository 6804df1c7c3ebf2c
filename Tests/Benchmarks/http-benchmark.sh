#!/usr/bin/env bash
# HTTP throughput of mp4probe against curl, both reading from nginx on 127.0.0.1 in the same
# run (issue 21). Not a test: it prints a table of medians, ratios and peak RSS.
#
#   Tests/Benchmarks/http-benchmark.sh [MP4PROBE_BINARY...]
#
# With no argument it builds and measures .build/release/mp4probe, with its own HTTP client and
# with URLSession (MP4PROBE_HTTP_CLIENT=urlsession) side by side; or give the commands to
# compare (a binary, possibly after `env VAR=value`; for example a build of an older commit).
# Files served:
#   4m.bin, 64m.bin, 1g.bin  sparse files (the bytes do not matter to a fetch)
#   long.mp4                 the two-hour file of seek-benchmark.sh (41 MB, 7.4 MB moov at the
#                            end), made if missing (~2 minutes of ffmpeg)
# Measured per size: `mp4probe fetch URL --cache DIR --all` (cache emptied before each run)
# against `curl -o FILE URL`; then `mp4probe info URL` on long.mp4 against the local `info`
# plus curl fetching the same byte ranges (the 64 KiB head and the tail from the end of mdat).
# Needs nginx, curl, hyperfine, GNU time (apt-get install -y nginx-light curl hyperfine time).
set -euo pipefail
cd "$(dirname "$0")/../.."
dir=${MP4PROBE_BENCH_DIR:-/tmp/mp4bench}
runs=${MP4PROBE_BENCH_RUNS:-5}
mkdir -p "$dir/www" "$dir/cache"
if [ $# -eq 0 ]; then
  swift build -c release --product mp4probe >/dev/null
  set -- "$PWD/.build/release/mp4probe" "env MP4PROBE_HTTP_CLIENT=urlsession $PWD/.build/release/mp4probe"
fi
[ -f "$dir/long.mp4" ] || Tests/Benchmarks/seek-benchmark.sh >/dev/null   # makes long.mp4
for size in 4m 64m 1g; do
  [ -f "$dir/www/$size.bin" ] || truncate -s "$size" "$dir/www/$size.bin"
done
ln -sf "$dir/long.mp4" "$dir/www/long.mp4"

# nginx with a private configuration on a free port.
. Tests/Benchmarks/nginx-origin.sh
start_origin "$dir" "$dir/www"
trap stop_origin EXIT
base=$origin

results="$dir/http-results.tsv"
: > "$results"
measure() {   # name command... -> appends "name median_s peak_rss_kib"
  local name=$1; shift
  hyperfine -N --warmup 1 --runs "$runs" --prepare "rm -rf $dir/cache/run $dir/out.bin" \
    --export-json "$dir/h.json" "$*" >/dev/null 2>&1
  rm -rf "$dir/cache/run" "$dir/out.bin"
  /usr/bin/time -v "$@" 2> "$dir/time.txt" >/dev/null
  local median rss
  median=$(python3 -c "import json; print(json.load(open('$dir/h.json'))['results'][0]['median'])")
  rss=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$dir/time.txt")
  printf '%s\t%s\t%s\n' "$name" "$median" "$rss" | tee -a "$results" >&2
}

for size in 4m 64m 1g; do
  measure "curl $size" curl -s -o "$dir/out.bin" "$base/$size.bin"
  i=0
  for bin in "$@"; do
    # shellcheck disable=SC2086
    measure "fetch#$i $size" $bin fetch "$base/$size.bin" --cache "$dir/cache/run" --all
    i=$((i + 1))
  done
done

# info URL on the moov-at-end file: the local info, curl of the same bytes, mp4probe over HTTP.
length=$(stat -L -c %s "$dir/long.mp4")
first=${1##* }
mdat_end=$("$first" boxes "$dir/long.mp4" --json | python3 -c '
import json, sys
boxes = json.load(sys.stdin)
boxes = boxes.get("boxes", boxes) if isinstance(boxes, dict) else boxes
print(next(b["offset"] + b["size"] for b in boxes if b["type"] == "mdat"))')
measure "startup" "$first" --version
measure "info local" "$first" info "$dir/long.mp4"
measure "curl moov" curl -s -o "$dir/out.bin" -r 0-65535 "$base/long.mp4" -o "$dir/out2.bin" -r "$mdat_end-$((length - 1))" "$base/long.mp4"
i=0
for bin in "$@"; do
  # shellcheck disable=SC2086
  measure "info#$i URL" $bin info "$base/long.mp4"
  i=$((i + 1))
done

python3 - "$results" "$@" <<'PY'
import sys, os
rows = {}
for line in open(sys.argv[1]):
    name, median, rss = line.rstrip("\n").split("\t")
    rows[name] = (float(median), int(rss))
names = [c.replace(os.getcwd() + "/", "") for c in sys.argv[2:]]
binaries = len(names)
print()
print("| task | curl | " + " | ".join(f"`{n}`" for n in names) + " |")
print("|---|---|" + "---|" * binaries)
for size, label in (("4m", "4 MB"), ("64m", "64 MB"), ("1g", "1 GB")):
    curl = rows[f"curl {size}"]
    cells = []
    for i in range(binaries):
        t, rss = rows[f"fetch#{i} {size}"]
        cells.append(f"{t*1000:.0f} ms ({t/curl[0]:.2f}x curl), {rss/1024:.0f} MiB RSS")
    print(f"| `fetch --all` {label} | {curl[0]*1000:.0f} ms, {curl[1]/1024:.0f} MiB RSS | " + " | ".join(cells) + " |")
local, curl = rows["info local"], rows["curl moov"]
goal = local[0] + curl[0]
cells = []
for i in range(binaries):
    t, rss = rows[f"info#{i} URL"]
    cells.append(f"{t*1000:.0f} ms ({t/goal:.2f}x local+curl), {rss/1024:.0f} MiB RSS")
print(f"| `mp4probe --version` (process start-up, included in every row) | | {rows['startup'][0]*1000:.0f} ms, {rows['startup'][1]/1024:.0f} MiB RSS |")
print(f"| `info URL` long.mp4 (7.4 MB moov at the end) | curl of the same bytes {curl[0]*1000:.0f} ms; local info {local[0]*1000:.0f} ms | " + " | ".join(cells) + " |")
PY
