#!/usr/bin/env bash
# Regenerates every file in SampleMedia/ (ffmpeg 5.1 from Debian 12, python3).
# Encoders are deterministic for these settings, but byte-identical output across ffmpeg
# versions is not promised: the goldens in Tests/ are recorded from the committed files.
set -euo pipefail
cd "$(dirname "$0")"
FF="ffmpeg -hide_banner -loglevel error -y -fflags +bitexact -flags:v +bitexact -flags:a +bitexact"
V="-f lavfi -i testsrc2=s=320x240:r=25:d=2"
A="-f lavfi -i sine=f=440:r=48000:d=2"
X264="-c:v libx264 -preset veryfast -pix_fmt yuv420p -g 25 -b:v 300k"

$FF $V $A $X264 -c:a aac -b:a 64k -movflags +faststart faststart.mp4
$FF $V $A $X264 -c:a aac -b:a 64k moov-at-end.mp4
$FF $V $A $X264 -c:a aac -b:a 64k -movflags frag_keyframe+empty_moov+default_base_moof fragmented.mp4
$FF $V $A $X264 -c:a aac -b:a 64k -movflags frag_keyframe+empty_moov+default_base_moof+global_sidx fragmented-sidx.mp4
# Fragments of 0.2 s that mostly do not start with a keyframe, with a global sidx.
$FF $V $A $X264 -c:a aac -b:a 64k -frag_duration 200000 -movflags empty_moov+default_base_moof+global_sidx fragmented-short.mp4
$FF $V $A $X264 -c:a pcm_s16le -f mov quicktime.mov
$FF $A -c:a aac -b:a 64k audio-edit-list.m4a
$FF $V $A -c:v libx265 -preset veryfast -x265-params log-level=error -pix_fmt yuv420p -b:v 200k -tag:v hvc1 -c:a aac -b:a 64k -movflags +faststart hevc.mp4
$FF $V $A -c:v libvpx-vp9 -deadline realtime -cpu-used 8 -b:v 200k -c:a libopus -b:a 48k -movflags +faststart vp9-opus.mp4
$FF -f lavfi -i testsrc2=s=160x120:r=25:d=1 -f lavfi -i sine=f=440:r=48000:d=1 -c:v libsvtav1 -preset 12 -b:v 100k -c:a libopus -b:a 32k -movflags +faststart av1-opus.mp4
$FF $A -c:a alac alac.m4a
$FF $A -c:a ac3 -b:a 96k ac3.mp4

# Structural variants and the malformed set, derived from the files above.
python3 make-variants.py
