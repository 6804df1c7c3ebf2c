#!/usr/bin/env bash
# Records what ffprobe says about every stream (and the duration) of every SampleMedia file and
# every valid file of ../shared/corpus: the oracle of Tests/MP4CoreTests/FFprobeFactsTests.swift
# (issue 15). Cover art, which ffprobe lists as a stream, is left out: it is not a track.
# Needs ffprobe (apt-get install -y ffmpeg). Files ffprobe cannot read get no rows.
set -euo pipefail
cd "$(dirname "$0")/../.."
python3 - <<'PY'
import glob, json, os, subprocess
files = sorted(f for f in glob.glob("SampleMedia/*") if f.endswith((".mp4", ".m4a", ".mov")))
files += sorted(glob.glob("../shared/corpus/valid/*"))
out = open("Tests/Goldens/ffprobe-facts.tsv", "w")
out.write("file\tstream\ttrack_id\tcodec_tag\tnb_frames\twidth\theight\tsample_rate\tchannels\tduration\ttags\n")
for path in files:
    name = path.replace("../shared/", "")
    try:
        result = subprocess.run(["ffprobe", "-v", "error", "-show_entries",
            "stream=index,id,codec_tag_string,nb_frames,width,height,sample_rate,channels,duration:stream_disposition=attached_pic:format=duration:format_tags",
            "-of", "json", path], capture_output=True, timeout=60)
        info = json.loads(result.stdout or b"{}")
    except Exception:
        continue
    if result.returncode != 0 or "format" not in info:
        continue
    def v(x): return "-" if x is None else str(x)
    tags = json.dumps(info["format"].get("tags", {}), ensure_ascii=True, sort_keys=True)
    out.write(f"{name}\tformat\t-\t-\t-\t-\t-\t-\t-\t{v(info['format'].get('duration'))}\t{tags}\n")
    for s in info.get("streams", []):
        # Cover art (an ilst 'covr' image) is a stream to ffmpeg but not a track.
        if s.get("disposition", {}).get("attached_pic") == 1:
            continue
        tid = s.get("id")
        tid = str(int(tid, 16)) if isinstance(tid, str) and tid.startswith("0x") else "-"
        out.write("\t".join([name, str(s["index"]), tid, v(s.get("codec_tag_string")), v(s.get("nb_frames")),
            v(s.get("width")), v(s.get("height")), v(s.get("sample_rate")), v(s.get("channels")), v(s.get("duration")), "-"]) + "\n")
PY
wc -l Tests/Goldens/ffprobe-facts.tsv
