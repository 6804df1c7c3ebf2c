#!/usr/bin/env bash
# The faststart benchmark (issue 4): in one run, times cp, `mp4probe faststart`, qt-faststart
# (Debian's ffmpeg package), `ffmpeg -c copy -map 0 -movflags +faststart` and PyPI's
# qtfaststart on the same moov-at-end file; prints medians, ratios to cp and peak memory, then
# checks every tool's output with ffmpeg's framemd5 against the input's. `cp+fsync` (dd
# conv=fsync) is the durable baseline: mp4probe flushes its output to disk before renaming it
# into place, which plain cp, qt-faststart, ffmpeg and qtfaststart do not.
#   Tests/Benchmarks/faststart-benchmark.sh [FILE]
# Without FILE it makes big.mp4 in $MP4PROBE_BENCH_DIR (default /tmp/mp4bench): 1280x720
# noisy testsrc2, libx264 -qp 0, AAC, moov at the end; $MP4PROBE_BENCH_SECONDS seconds
# (default 30: about 1.4 GB, ~20 s to encode). Needs ffmpeg, hyperfine, python3 with venv;
# about 3x the file size free on the disk. Never run from the unit tests.
set -euo pipefail
cd "$(dirname "$0")/../.."
dir=${MP4PROBE_BENCH_DIR:-/tmp/mp4bench}
seconds=${MP4PROBE_BENCH_SECONDS:-30}
runs=${MP4PROBE_BENCH_RUNS:-5}
mkdir -p "$dir"
file=${1:-$dir/big.mp4}
if [ ! -f "$file" ]; then
  echo "making $file ($seconds s of lossless 720p)..."
  ffmpeg -hide_banner -loglevel error -y -f lavfi -i "testsrc2=s=1280x720:r=30:d=$seconds" \
    -f lavfi -i "anoisesrc=d=$seconds:c=pink:r=48000" -vf "noise=alls=40:allf=t" \
    -c:v libx264 -preset ultrafast -qp 0 -pix_fmt yuv420p -c:a aac -b:a 128k "$file"
fi
if [ ! -x "$dir/venv/bin/qtfaststart" ]; then
  python3 -m venv "$dir/venv" && "$dir/venv/bin/pip" install -q qtfaststart
fi
swift build -c release --product mp4probe >/dev/null
probe="$PWD/.build/release/mp4probe"
out="$dir/out.mp4"
size=$(stat -c %s "$file")
echo "input: $file, $size bytes; moov: $("$probe" "$file" | grep Faststart)"
declare -A commands=(
  [cp]="cp $file $out"
  [cp+fsync]="dd if=$file of=$out bs=8M conv=fsync status=none"
  [mp4probe]="$probe faststart --quiet $file $out"
  [qt-faststart]="qt-faststart $file $out"
  [ffmpeg]="ffmpeg -v error -y -i $file -map 0 -c copy -movflags +faststart $out"
  [qtfaststart]="$dir/venv/bin/qtfaststart $file $out"
)
order=(cp cp+fsync mp4probe qt-faststart ffmpeg qtfaststart)
args=()
for name in "${order[@]}"; do args+=(-n "$name" "${commands[$name]}"); done
hyperfine -N --warmup 1 --runs "$runs" --prepare "rm -f $out" --export-json "$dir/faststart-hyperfine.json" "${args[@]}" >/dev/null
reference=$(ffmpeg -v error -i "$file" -map 0 -c copy -f framemd5 - | grep -v '^#' | md5sum | cut -d' ' -f1)
results="$dir/faststart-results.tsv"
: > "$results"
for name in "${order[@]}"; do
  rm -f "$out"
  status=ok
  /usr/bin/time -f %M -o "$dir/rss.txt" ${commands[$name]} >/dev/null 2>"$dir/stderr.txt" || status="exit $?"
  rss=$(tail -1 "$dir/rss.txt")
  verdict="-"
  if [ "$name" != cp ] && [ "$name" != cp+fsync ]; then
    if [ -f "$out" ]; then
      fast=$("$probe" "$out" 2>/dev/null | grep -c "Faststart:  yes" || true)
      md5=$(ffmpeg -v error -i "$out" -map 0 -c copy -f framemd5 - 2>/dev/null | grep -v '^#' | md5sum | cut -d' ' -f1)
      verdict="framemd5 $([ "$md5" = "$reference" ] && echo same || echo DIFFERENT), faststart $([ "$fast" = 1 ] && echo yes || echo NO)"
    else
      verdict="no output ($status: $(head -c 200 "$dir/stderr.txt" | tr '\n' ' '))"
    fi
  fi
  printf '%s\t%s\t%s\n' "$name" "$rss" "$verdict" >> "$results"
done
rm -f "$out"
python3 - "$dir/faststart-hyperfine.json" "$results" <<'PY'
import json, sys
runs = {r["command"]: r for r in json.load(open(sys.argv[1]))["results"]}
extra = {}
for line in open(sys.argv[2]):
    name, rss, verdict = line.rstrip("\n").split("\t")
    extra[name] = (int(rss), verdict)
cp = runs["cp"]["median"]
print(f"{'tool':<14}{'median':>10}{'x cp':>8}{'peak RSS':>12}  output check")
for name in ["cp", "cp+fsync", "mp4probe", "qt-faststart", "ffmpeg", "qtfaststart"]:
    r = runs[name]
    rss, verdict = extra[name]
    print(f"{name:<14}{r['median']:>9.3f}s{r['median']/cp:>7.2f}x{rss/1024:>9.1f} MiB  {verdict}")
PY
