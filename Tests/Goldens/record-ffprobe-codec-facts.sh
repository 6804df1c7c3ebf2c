#!/usr/bin/env bash
# Records what ffprobe says of every video stream's pictures in every SampleMedia file and
# every valid file of ../shared/corpus (pixel format, field order, average frame rate,
# transfer function): the oracle of FFprobeFactsTests.codecFactsAgreeWithFFprobe (issue 45).
# Needs ffprobe (apt-get install -y ffmpeg). Files ffprobe cannot read get no rows.
set -euo pipefail
cd "$(dirname "$0")/../.."
python3 - <<'PY'
import glob, json, subprocess
files = sorted(f for f in glob.glob("SampleMedia/*") if f.endswith((".mp4", ".m4a", ".mov")))
files += sorted(glob.glob("../shared/corpus/valid/*"))
out = open("Tests/Goldens/ffprobe-codec-facts.tsv", "w")
out.write("file\ttrack_id\tpix_fmt\tfield_order\tavg_frame_rate\tcolor_transfer\n")
for path in files:
    name = path.replace("../shared/", "")
    try:
        result = subprocess.run(["ffprobe", "-v", "error", "-select_streams", "v", "-show_entries",
            "stream=id,pix_fmt,field_order,avg_frame_rate,color_transfer:stream_disposition=attached_pic", "-of", "json", path],
            capture_output=True, timeout=60)
        info = json.loads(result.stdout or b"{}")
    except Exception:
        continue
    if result.returncode != 0:
        continue
    def v(x): return "-" if x in (None, "", "unknown") else str(x)
    for s in info.get("streams", []):
        if s.get("disposition", {}).get("attached_pic") == 1:
            continue
        tid = s.get("id")
        if not (isinstance(tid, str) and tid.startswith("0x")):
            continue
        out.write("\t".join([name, str(int(tid, 16)), v(s.get("pix_fmt")), v(s.get("field_order")), v(s.get("avg_frame_rate")), v(s.get("color_transfer"))]) + "\n")
PY
wc -l Tests/Goldens/ffprobe-codec-facts.tsv
