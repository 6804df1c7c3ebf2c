#!/usr/bin/env bash
# Records `ffprobe -show_packets` (stream, pts, dts, size, pos, flags) for every SampleMedia
# file, and for the valid files of ../shared/corpus when it is present: the oracle of
# Tests/MP4CoreTests/SampleTableOracleTests.swift and CorpusOracleTests.swift.
# Recorded with ffmpeg 5.1.x (Debian 12).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
record() {  # record INPUT OUTPUT
  ffprobe -v error -show_packets -show_entries packet=stream_index,pts,dts,pos,size,flags -of csv=p=0 "$1" 2>/dev/null \
    | cut -d, -f1-6 > "$2" || true
}
cd "$root/SampleMedia"
for f in *.mp4 *.m4a *.mov; do record "$f" "$root/Tests/Goldens/ffprobe-packets/$f.csv"; done
corpus="$root/../shared/corpus"
if [ -d "$corpus/valid" ]; then
  out="$root/Tests/Goldens/ffprobe-packets-corpus"
  mkdir -p "$out"
  for f in "$corpus"/valid/*; do
    name="$(basename "$f")"
    record "$f" "$out/$name.csv"
    [ -s "$out/$name.csv" ] || rm -f "$out/$name.csv"
  done
fi
