#!/usr/bin/env bash
# Records what ffprobe says about every stream of every SampleMedia file, as the independent
# oracle for Tests/MP4CoreTests/SampleMediaOracleTests.swift. Run after make-samples.sh.
set -euo pipefail
cd "$(dirname "$0")/../../SampleMedia"
out=../Tests/Goldens/ffprobe-streams.tsv
printf 'file\tindex\tcodec_tag\tnb_frames\twidth\theight\tsample_rate\tchannels\tprofile\n' > "$out"
for f in *.mp4 *.m4a *.mov; do
  ffprobe -v error -show_entries stream=index,codec_tag_string,nb_frames,width,height,sample_rate,channels,profile \
    -of json "$f" | python3 -c '
import json, sys
name = sys.argv[1]
for s in json.load(sys.stdin)["streams"]:
    print("\t".join([name, str(s["index"]), s.get("codec_tag_string", "-"), s.get("nb_frames", "-"),
                     str(s.get("width", "-")), str(s.get("height", "-")), s.get("sample_rate", "-"),
                     str(s.get("channels", "-")), s.get("profile", "-")]))' "$f" >> "$out"
done
