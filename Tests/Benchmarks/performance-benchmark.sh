#!/usr/bin/env bash
# The performance benchmark of issue 18, in one run, ratios against peers measured in the same
# run (hyperfine medians, warm page cache):
#   1. faststart in place (space inserted, FALLOC_FL_INSERT_RANGE) vs cp, on a ~1.4 GB and a
#      ~4.6 GB moov-at-end film, with the disk space each needs;
#   2. faststart IN OUT on XFS with reflinks vs cp followed by sync (a loop-mounted XFS image
#      under $dir/xfs; skipped without root, loop devices or mkfs.xfs);
#   3. faststart of a small film vs qt-faststart;
#   4. info vs ffprobe, mediainfo and AtomicParsley, on the two-hour film and the small one;
#   5. check over 1,000 small files vs a loop of ffprobe;
#   6. start-up: `mp4probe --version`, the static release build (README) vs the default build.
# Every faststart output is checked: faststart, and ffmpeg's framemd5 equal to the input's.
#   Tests/Benchmarks/performance-benchmark.sh
# Files go to $MP4PROBE_BENCH_DIR (default /tmp/mp4bench): big.mp4 (30 s lossless 720p, as
# faststart-benchmark.sh makes it), huge.mp4 (100 s, ~4.6 GB), long.mp4 (as
# seek-benchmark.sh makes it) and small.mp4; about 20 GB free needed. Needs ffmpeg, hyperfine,
# mediainfo, atomicparsley (apt-get install -y ffmpeg hyperfine mediainfo atomicparsley).
# Never run from the unit tests.
set -euo pipefail
cd "$(dirname "$0")/../.."
dir=${MP4PROBE_BENCH_DIR:-/tmp/mp4bench}
runs=${MP4PROBE_BENCH_RUNS:-5}
mkdir -p "$dir"

lossless() {  # lossless 720p film of $2 seconds at $1, moov at the end
  [ -f "$1" ] && return
  echo "making $1 ($2 s of lossless 720p)..."
  ffmpeg -hide_banner -loglevel error -y -f lavfi -i "testsrc2=s=1280x720:r=30:d=$2" \
    -f lavfi -i "anoisesrc=d=$2:c=pink:r=48000" -vf "noise=alls=40:allf=t" \
    -c:v libx264 -preset ultrafast -qp 0 -pix_fmt yuv420p -c:a aac -b:a 128k "$1"
}
lossless "$dir/big.mp4" 30
lossless "$dir/huge.mp4" 100
if [ ! -f "$dir/long.mp4" ]; then
  ffmpeg -hide_banner -loglevel error -y -f lavfi -i testsrc2=s=64x64:r=30:d=7200 -f lavfi -i sine=f=440:r=48000:d=7200 \
    -c:v libx264 -pix_fmt yuv420p -preset ultrafast -bf 2 -g 60 -b:v 20k -c:a aac -b:a 16k -ac 1 "$dir/long.mp4"
fi
if [ ! -f "$dir/small.mp4" ]; then
  ffmpeg -hide_banner -loglevel error -y -f lavfi -i testsrc2=s=320x240:r=25:d=10 -f lavfi -i sine=f=440:d=10 \
    -c:v libx264 -preset veryfast -b:v 400k -c:a aac -b:a 64k "$dir/small.mp4"
fi

# The README's release build (static, libcurl loaded on first use) and the default one.
mkdir -p .build/no-curl && ar rc .build/no-curl/libcurl.a
swift build -c release --product mp4probe --static-swift-stdlib -Xswiftc -L"$PWD/.build/no-curl" --scratch-path .build/static >/dev/null 2>&1
swift build -c release --product mp4probe >/dev/null
probe="$PWD/.build/static/release/mp4probe"
dynamic="$PWD/.build/release/mp4probe"

results="$dir/performance-results.tsv"
: > "$results"
# median NAME COMMAND [hyperfine options...]: the median in ms, recorded as NAME. Commands of
# a few milliseconds run n=200 times after warmup=20 (n=200 warmup=20 median ...).
export n warmup
median() {
  local name=$1 command=$2; shift 2
  hyperfine -N --warmup "${warmup:-1}" --runs "${n:-$runs}" --export-json "$dir/h.json" "$@" "$command" >/dev/null 2>&1
  python3 -c "import json; print('%.3f' % (json.load(open('$dir/h.json'))['results'][0]['median']*1000))" | tee -a /dev/stderr | sed "s/^/$name\t/" >> "$results"
}
value() { awk -F'\t' -v n="$1" '$1 == n { print $2 }' "$results"; }
frames() { ffmpeg -v error -i "$1" -map 0 -c copy -f framemd5 - | grep -v '^#' | md5sum | cut -d' ' -f1; }
checked() {  # checked OUTPUT REFERENCE_MD5: "faststart, framemd5 same" or what is wrong
  local fast md5
  fast=$("$probe" "$1" | grep -c "Faststart:  yes" || true)
  md5=$(frames "$1")
  echo "faststart $([ "$fast" = 1 ] && echo yes || echo NO), framemd5 $([ "$md5" = "$2" ] && echo same || echo DIFFERENT)"
}

# 1. In place vs cp.
inplace_rows=()
for name in big huge; do
  file="$dir/$name.mp4" work="$dir/work.mp4" copy="$dir/copy.mp4"
  size=$(stat -c %s "$file")
  reference=$(frames "$file")
  echo "$name.mp4: $size bytes" >&2
  median "cp-$name" "cp $file $copy" --prepare "rm -f $copy"
  # cp returns with the copy still in memory; the in-place run is durable (fsync) when it
  # returns. cp followed by sync is the durable copy.
  median "cp-sync-$name" "sh -c 'cp $file $copy && sync'" --prepare "sh -c 'rm -f $copy && sync'"
  rm -f "$copy"
  # The restored copy is flushed first: a file just written has its pages dirty, and inserting
  # space writes the dirty pages of the whole file back before it shifts the extents (the
  # ordinary case, a file on disk, has none).
  median "inplace-$name" "$probe faststart --in-place --quiet $work" --prepare "sh -c 'cp $file $work && sync'"
  # Cold: nothing of the file in the page cache (as root). The insertion's cost is mostly the
  # kernel dropping the file's cached pages, whose offsets all change.
  if [ "$(id -u)" = 0 ]; then
    median "cp-cold-$name" "cp $file $copy" --prepare "sh -c 'rm -f $copy; sync; echo 1 > /proc/sys/vm/drop_caches'"
    rm -f "$copy"
    # (mp4probe's own binary is read back in after the drop: the cold file is what is measured)
    median "inplace-cold-$name" "$probe faststart --in-place --quiet $work" --prepare "sh -c 'cp $file $work && sync && echo 1 > /proc/sys/vm/drop_caches && $probe --version'"
  fi
  cp "$file" "$work" && sync
  free_before=$(df --output=avail -B1 "$dir" | tail -1)
  report=$("$probe" faststart --in-place --json "$work")
  free_after=$(df --output=avail -B1 "$dir" | tail -1)
  method=$(echo "$report" | python3 -c "import json,sys; print(json.load(sys.stdin)['method'])")
  verdict=$(checked "$work" "$reference")
  inplace_rows+=("$name|$size|$method|$((free_before - free_after))|$(stat -c %s "$work")|$verdict")
  rm -f "$work"
done

# 2. IN OUT with reflinks on XFS vs cp + sync.
clone_row="skipped (no loop-mounted XFS: needs root, loop devices and mkfs.xfs)"
xfs="$dir/xfs"
if [ "$(id -u)" = 0 ] && command -v mkfs.xfs >/dev/null; then
  if ! mountpoint -q "$xfs" 2>/dev/null; then
    mkdir -p "$xfs"; truncate -s 8G "$dir/xfs.img"
    (mkfs.xfs -q -f "$dir/xfs.img" && mount -o loop "$dir/xfs.img" "$xfs") || true
  fi
  if mountpoint -q "$xfs"; then
    cp "$dir/big.mp4" "$xfs/in.mp4"
    # coreutils 9 cp clones on XFS by itself; --reflink=never is the copy the issue compares with.
    median "cp-sync-xfs" "sh -c 'cp --reflink=never $xfs/in.mp4 $xfs/out.mp4 && sync'" --prepare "rm -f $xfs/out.mp4"
    median "cp-reflink-xfs" "sh -c 'cp --reflink=always $xfs/in.mp4 $xfs/out.mp4 && sync'" --prepare "rm -f $xfs/out.mp4"
    median "clone-xfs" "$probe faststart --quiet $xfs/in.mp4 $xfs/out.mp4" --prepare "rm -f $xfs/out.mp4"
    rm -f "$xfs/out.mp4"; sync
    free_before=$(df --output=avail -B1 "$xfs" | tail -1)
    method=$("$probe" faststart --json "$xfs/in.mp4" "$xfs/out.mp4" | python3 -c "import json,sys; print(json.load(sys.stdin)['method'])")
    sync
    free_after=$(df --output=avail -B1 "$xfs" | tail -1)
    clone_row="$method|$((free_before - free_after))|$(checked "$xfs/out.mp4" "$(frames "$dir/big.mp4")")"
    rm -f "$xfs/out.mp4"
    # In place on XFS, the file in the page cache: XFS caches in large folios, which the
    # insertion drops far faster than ext4's 4 KiB pages.
    median "cp-xfs" "cp --reflink=never $xfs/in.mp4 $xfs/copy.mp4" --prepare "rm -f $xfs/copy.mp4"
    rm -f "$xfs/copy.mp4"
    median "inplace-xfs" "$probe faststart --in-place --quiet $xfs/work.mp4" --prepare "sh -c 'cp --reflink=never $xfs/in.mp4 $xfs/work.mp4 && sync && cat $xfs/work.mp4 > /dev/null'"
    inplace_xfs_verdict=$(checked "$xfs/work.mp4" "$(frames "$dir/big.mp4")")
    rm -f "$xfs/work.mp4" "$xfs/in.mp4"
  fi
fi

# 3. Small-file faststart vs qt-faststart.
n=200 warmup=20 median "faststart-small" "$probe faststart --quiet $dir/small.mp4 $dir/small-out.mp4" --prepare "rm -f $dir/small-out.mp4"
n=200 warmup=20 median "qt-faststart-small" "qt-faststart $dir/small.mp4 $dir/small-out.mp4" --prepare "rm -f $dir/small-out.mp4"
"$probe" faststart --quiet "$dir/small.mp4" "$dir/small-out.mp4"
small_verdict=$(checked "$dir/small-out.mp4" "$(frames "$dir/small.mp4")")

# 4. info vs peers.
for name in long small; do
  file="$dir/$name.mp4"
  n=100 warmup=10 median "info-$name" "$probe info $file"
  n=100 warmup=10 median "ffprobe-$name" "ffprobe -v error -show_format -show_streams $file"
  n=100 warmup=10 median "mediainfo-$name" "mediainfo $file"
  n=100 warmup=10 median "atomicparsley-$name" "AtomicParsley $file -T"
done

# 5. check over 1,000 small files vs a loop of ffprobe.
many="$dir/many"
if [ ! -d "$many" ] || [ "$(ls "$many" | wc -l)" != 1000 ]; then
  rm -rf "$many"; mkdir -p "$many"
  samples=(SampleMedia/faststart.mp4 SampleMedia/moov-at-end.mp4 SampleMedia/hevc.mp4 SampleMedia/alac.m4a SampleMedia/quicktime.mov)
  for i in $(seq 1 1000); do cp "${samples[$((i % 5))]}" "$many/$i.${samples[$((i % 5))]##*.}"; done
fi
median "check-1000" "$probe check --quiet $many" -i
start=$(date +%s.%N)
for f in "$many"/*; do ffprobe -v error -show_format -show_streams "$f" >/dev/null; done
echo -e "ffprobe-loop-1000\t$(echo "($(date +%s.%N) - $start) * 1000" | bc)" >> "$results"

# 6. Start-up.
n=200 warmup=20 median "version-static" "$probe --version"
n=200 warmup=20 median "version-dynamic" "$dynamic --version"
# The floors, built the same way in the same run: a static hello world that links all of
# Foundation (as mp4probe must, for URLSession), and one in pure Swift.
printf 'import Foundation\nif CommandLine.arguments.count > 5 { print(NSString(string: "x").length, FileManager.default.currentDirectoryPath) }\nprint("hello")\n' > "$dir/hello-foundation.swift"
printf 'print("hello")\n' > "$dir/hello-swift.swift"
swiftc -O -static-stdlib "$dir/hello-foundation.swift" -o "$dir/hello-foundation" 2>/dev/null
swiftc -O -static-stdlib "$dir/hello-swift.swift" -o "$dir/hello-swift" 2>/dev/null
n=200 warmup=20 median "hello-foundation" "$dir/hello-foundation"
n=200 warmup=20 median "hello-swift" "$dir/hello-swift"

ratio() { python3 -c "print('%.3f' % ($1 / $2))"; }
echo
echo "| faststart in place | size | cp | cp + sync | in place | × cp | × (cp + sync) | cold: cp | cold: in place | × cp | method | disk used by the run | size after | output |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
for row in "${inplace_rows[@]}"; do
  IFS='|' read -r name size method used after verdict <<< "$row"
  c=$(value "cp-$name"); cs=$(value "cp-sync-$name"); p=$(value "inplace-$name"); cc=$(value "cp-cold-$name"); pc=$(value "inplace-cold-$name")
  cold="| - | - | -"
  [ -n "$cc" ] && cold="| $cc ms | $pc ms | $(ratio "$pc" "$cc")"
  echo "| $name.mp4 | $size B | $c ms | $cs ms | $p ms | $(ratio "$p" "$c") | $(ratio "$p" "$cs") $cold | $method | $used B | $after B | $verdict |"
done
echo
if [[ "$clone_row" == skipped* ]]; then
  echo "IN OUT with reflinks: $clone_row"
else
  IFS='|' read -r method used verdict <<< "$clone_row"
  c=$(value cp-sync-xfs); p=$(value clone-xfs); r=$(value cp-reflink-xfs)
  echo "| IN OUT on XFS (big.mp4) | cp --reflink=never + sync | cp --reflink=always + sync | mp4probe faststart | × (cp + sync) | method | disk used | output |"
  echo "|---|---|---|---|---|---|---|---|"
  echo "| $(stat -c %s "$dir/big.mp4") B | $c ms | $r ms | $p ms | $(ratio "$p" "$c") | $method | $used B | $verdict |"
  echo
  echo "| in place on XFS, file cached (big.mp4) | cp --reflink=never | in place | × cp | output |"
  echo "|---|---|---|---|---|"
  echo "| $(stat -c %s "$dir/big.mp4") B | $(value cp-xfs) ms | $(value inplace-xfs) ms | $(ratio "$(value inplace-xfs)" "$(value cp-xfs)") | $inplace_xfs_verdict |"
fi
echo
echo "| small film ($(stat -c %s "$dir/small.mp4") B) | mp4probe faststart | qt-faststart | ratio | output |"
echo "|---|---|---|---|---|"
echo "| faststart | $(value faststart-small) ms | $(value qt-faststart-small) ms | $(ratio "$(value faststart-small)" "$(value qt-faststart-small)") | $small_verdict |"
echo
echo "| info | mp4probe | ffprobe | mediainfo | AtomicParsley -T | ffprobe ÷ mp4probe | AtomicParsley ÷ mp4probe |"
echo "|---|---|---|---|---|---|---|"
for name in long small; do
  m=$(value "info-$name")
  echo "| $name.mp4 ($(stat -c %s "$dir/$name.mp4") B) | $m ms | $(value "ffprobe-$name") ms | $(value "mediainfo-$name") ms | $(value "atomicparsley-$name") ms | $(ratio "$(value "ffprobe-$name")" "$m") | $(ratio "$(value "atomicparsley-$name")" "$m") |"
done
echo
c=$(value check-1000); f=$(value ffprobe-loop-1000)
echo "| 1,000 small files | mp4probe check | ffprobe loop | files/s (check) | files/s (ffprobe) | ratio |"
echo "|---|---|---|---|---|---|"
echo "| $(du -sb "$many" | cut -f1) B | $c ms | $f ms | $(python3 -c "print(round(1000 / ($c / 1000)))") | $(python3 -c "print(round(1000 / ($f / 1000)))") | $(ratio "$f" "$c") |"
echo
echo "| start-up | static release build (README) | default build | static hello world, all of Foundation | static hello world, pure Swift |"
echo "|---|---|---|---|---|"
echo "| mp4probe --version | $(value version-static) ms | $(value version-dynamic) ms | $(value hello-foundation) ms | $(value hello-swift) ms |"
