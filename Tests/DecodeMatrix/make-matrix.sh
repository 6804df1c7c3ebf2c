#!/usr/bin/env bash
# Generates the decode-verification matrix for the seek tests into DIR (default
# /tmp/mp4probe-decode-matrix): short files covering the codecs and layouts a seek plan must
# serve (B-frames, open GOP, VFR, negative CTS, edit lists from cuts and offsets, hybrid and
# empty-moov fragments, CMAF/DASH, several audio codecs and tracks). Needs ffmpeg with libx264,
# libx265, libvpx, libsvtav1, libopus, libmp3lame (Debian 12's ffmpeg 5.1 has them all).
#
# Files are made once per DIR: a stamp holding this script's checksum makes a second run free.
# Each file is written to a temporary name and renamed, so an interrupted run never leaves a
# half-written file behind. Encoders missing from the local ffmpeg skip their rows.
set -euo pipefail
DIR="${1:-/tmp/mp4probe-decode-matrix}"
mkdir -p "$DIR"
SUM="$(sha256sum "$0" | cut -c1-16)"
if [ -f "$DIR/.stamp" ] && [ "$(cat "$DIR/.stamp")" = "$SUM" ]; then exit 0; fi
rm -f "$DIR"/*.mp4 "$DIR"/*.mov "$DIR"/*.m4a "$DIR/.stamp"

FF="ffmpeg -hide_banner -loglevel error -nostdin -y -fflags +bitexact -flags:v +bitexact -flags:a +bitexact"
D=6
V="-f lavfi -i testsrc2=s=160x120:r=25:d=$D"
A="-f lavfi -i sine=f=440:r=48000:d=$D:beep_factor=3"
A2="-f lavfi -i sine=f=660:r=44100:d=$D:beep_factor=5"
X264="-c:v libx264 -preset veryfast -pix_fmt yuv420p -g 30 -keyint_min 30 -sc_threshold 0 -b:v 200k"
AAC="-c:a aac -b:a 64k"
ENCODERS="$(ffmpeg -hide_banner -encoders 2>/dev/null || true)"
has() { case "$ENCODERS" in *" $1 "*) return 0;; *) return 1;; esac; }
make() { # make NAME ARGS...: ffmpeg ARGS into NAME, atomically
  local name="$1"; shift
  local ext="${name##*.}"
  if $FF "$@" "$DIR/.tmp.$ext" 2>"$DIR/.err"; then mv "$DIR/.tmp.$ext" "$DIR/$name"
  else echo "make-matrix: skipped $name: $(head -c 300 "$DIR/.err")" >&2; rm -f "$DIR/.tmp.$ext"; fi
}

# Video codecs, each with an audio codec.
make h264-bframes-aac.mp4 $V $A $X264 $AAC
make h264-nobframes-mp3.mp4 $V $A $X264 -bf 0 -c:a libmp3lame -b:a 64k
make h264-faststart-aac.mp4 $V $A $X264 $AAC -movflags +faststart
make h264-negative-cts.mp4 $V $A $X264 $AAC -movflags +negative_cts_offsets
make h264-vfr.mp4 $V $A $X264 -vf "select='not(mod(n\,3))+eq(n\,100)',setpts='N/(25*TB)+if(gt(N\,30)\,0.3\,0)/TB'" -fps_mode vfr $AAC
make hevc-opengop-aac.mp4 $V $A -c:v libx265 -preset veryfast -x265-params log-level=error:keyint=30:min-keyint=30:open-gop=1:scenecut=0 -pix_fmt yuv420p -b:v 150k -tag:v hvc1 $AAC
make vp9-opus.mp4 $V $A -c:v libvpx-vp9 -deadline realtime -cpu-used 8 -g 30 -b:v 150k -c:a libopus -b:a 48k
if has libsvtav1; then make av1-opus.mp4 $V $A -c:v libsvtav1 -preset 12 -g 30 -b:v 100k -c:a libopus -b:a 32k; fi
make mpeg4-ac3.mp4 $V $A -c:v mpeg4 -g 30 -bf 2 -q:v 5 -c:a ac3 -b:a 96k

# Audio only and audio codecs.
make aac.m4a $A $AAC
make opus.mp4 $A -c:a libopus -b:a 48k
make mp3.mp4 $A -c:a libmp3lame -b:a 64k
make alac.m4a $A -c:a alac
make flac.mp4 $A -c:a flac -strict -2
make eac3.mp4 $A -c:a eac3 -b:a 96k
make ac3.mp4 $A -c:a ac3 -b:a 96k
make pcm.mov $V $A $X264 -c:a pcm_s16le -f mov
make pcm-audio-only.mov $A -c:a pcm_s24le -f mov

# Several tracks.
make two-audio.mp4 $V $A $A2 -map 0:v -map 1:a -map 2:a $X264 $AAC -c:a:1 ac3 -b:a:1 96k
printf ';FFMETADATA1\n[CHAPTER]\nTIMEBASE=1/1000\nSTART=0\nEND=2500\ntitle=One\n[CHAPTER]\nTIMEBASE=1/1000\nSTART=2500\nEND=6000\ntitle=Two\n' > "$DIR/.chapters.txt"
make chapters.mp4 $V $A -i "$DIR/.chapters.txt" -map 0:v -map 1:a -map_metadata 2 -map_chapters 2 $X264 $AAC

# Edit lists: a stream-copy cut (media_time skips to the cut), a delayed audio track (an
# empty edit), and a delayed video track.
make .cut-source.mp4 $V $A $X264 $AAC
if [ -f "$DIR/.cut-source.mp4" ]; then
  make cut-copy.mp4 -ss 1.3 -i "$DIR/.cut-source.mp4" -c copy
  make cut-copy-end.mp4 -i "$DIR/.cut-source.mp4" -t 4.5 -c copy
fi
make itsoffset-audio.mp4 $V -itsoffset 0.5 $A $X264 $AAC
make itsoffset-video.mp4 -itsoffset 0.3 $V $A $X264 $AAC

# Fragmented layouts.
make frag-empty-moov.mp4 $V $A $X264 $AAC -movflags frag_keyframe+empty_moov+default_base_moof
make frag-sidx.mp4 $V $A $X264 $AAC -movflags frag_keyframe+empty_moov+default_base_moof+global_sidx
make frag-short.mp4 $V $A $X264 $AAC -frag_duration 300000 -movflags empty_moov+default_base_moof
make frag-hybrid.mp4 $V $A $X264 $AAC -movflags frag_keyframe
make frag-dash.mp4 $V $A $X264 $AAC -movflags +dash
make frag-cmaf.mp4 $V $A $X264 $AAC -movflags +cmaf
make frag-opus.mp4 $A -c:a libopus -b:a 48k -movflags frag_keyframe+empty_moov+default_base_moof -frag_duration 500000

rm -f "$DIR/.err" "$DIR/.chapters.txt"
echo "$SUM" > "$DIR/.stamp"
