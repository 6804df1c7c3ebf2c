#!/usr/bin/env bash
# The two-hour-file benchmark of the seek index (issue 3), with ffprobe measured in the same run.
#   Tests/Benchmarks/seek-benchmark.sh [FILE]
# Without FILE it makes long.mp4 (~41 MB, 216,000 video + 337,501 audio samples, moov at the
# end; ~2 minutes of encoding) in $MP4PROBE_BENCH_DIR (default /tmp/mp4bench), as in
# ../shared/docs/peers.md. Needs ffmpeg and hyperfine (apt-get install -y ffmpeg hyperfine).
set -euo pipefail
cd "$(dirname "$0")/../.."
dir=${MP4PROBE_BENCH_DIR:-/tmp/mp4bench}
file=${1:-$dir/long.mp4}
if [ ! -f "$file" ]; then
  mkdir -p "$dir"
  ffmpeg -hide_banner -loglevel error -y -f lavfi -i testsrc2=s=64x64:r=30:d=7200 -f lavfi -i sine=f=440:r=48000:d=7200 \
    -c:v libx264 -pix_fmt yuv420p -preset ultrafast -bf 2 -g 60 -b:v 20k -c:a aac -b:a 16k -ac 1 "$file"
fi
swift build -c release --product SeekBenchmark >/dev/null
bench=.build/release/SeekBenchmark
"$bench" "$file" 10000 | tee /tmp/seek-bench.txt
echo
hyperfine -N --warmup 2 --runs 10 --export-json /tmp/seek-hyperfine.json \
  "$bench $file 1" "ffprobe -v error -show_format -show_streams $file" >/dev/null
/usr/bin/time -v "$bench" "$file" 1 2> /tmp/seek-time.txt >/dev/null
/usr/bin/time -v ffprobe -v error -show_format -show_streams "$file" 2> /tmp/ffprobe-time.txt >/dev/null
python3 - <<'PY'
import json, re
runs = json.load(open("/tmp/seek-hyperfine.json"))["results"]
ours, ffprobe = runs[0]["median"], runs[1]["median"]
def rss(path):
    return int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", open(path).read()).group(1))
print(f"whole process, median of 10 (hyperfine): mp4probe open+index+1 query {ours*1000:.1f} ms, "
      f"ffprobe -show_format -show_streams {ffprobe*1000:.1f} ms  ->  {ffprobe/ours:.1f}x faster")
print(f"peak RSS (GNU time): mp4probe {rss('/tmp/seek-time.txt')} KiB, ffprobe {rss('/tmp/ffprobe-time.txt')} KiB")
PY
