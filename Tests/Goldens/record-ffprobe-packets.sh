#!/usr/bin/env bash
# Records `ffprobe -show_packets` (stream, pts, dts, pos, size, flags) for every progressive
# SampleMedia file: the oracle of Tests/MP4CoreTests/SampleTableOracleTests.swift.
set -euo pipefail
cd "$(dirname "$0")/../../SampleMedia"
for f in *.mp4 *.m4a *.mov; do
  case "$f" in fragmented*) continue ;; esac
  ffprobe -v error -show_packets -show_entries packet=stream_index,pts,dts,pos,size,flags -of csv=p=0 "$f" \
    | cut -d, -f1-6 > "../Tests/Goldens/ffprobe-packets/$f.csv"
done
