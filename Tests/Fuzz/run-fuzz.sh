#!/usr/bin/env bash
# Fuzzes the parse path and the CLI's output paths (Tests/Fuzz/MP4Fuzz) with libFuzzer +
# AddressSanitizer; a report written in one piece over 1 MiB (not streamed) also stops it.
#   Tests/Fuzz/run-fuzz.sh [SECONDS] [extra libFuzzer flags...]
# Seeds: SampleMedia/ (and its malformed set) plus ../shared/corpus when present, copied into a
# working corpus under $MP4PROBE_FUZZ_DIR (default /tmp/mp4probe-fuzz), never into the project.
# A crash, an input slower than 1 s (-timeout; 4 s in a debug build, which runs about a quarter
# as fast), a single allocation above 512 MB or above 2 GB
# RSS stops the run with the input saved in $MP4PROBE_FUZZ_DIR/artifacts; add it to
# SampleMedia/malformed/ with a test.
#
# MP4PROBE_FUZZ_TARGET picks what is fuzzed (one binary, one target per run):
#   mp4        the parse path and the CLI's output paths, the inspector page's data included (the default)
#   mp4-parse  the parse path alone (about 10x the inputs per second)
#   http-head  HTTP heads as client and server parse them, framing, chunk sizes, queries
#   range      Range and If-Range against SourceResponder (invariants on 200/206/416)
#   cache-table  the cache table decoder, past its checksum
# Each has its own corpus ($MP4PROBE_FUZZ_DIR/TARGET), dictionary and seeds
# (Tests/Fuzz/TARGET.dict, Tests/Fuzz/seeds/TARGET; the mp4 targets use SampleMedia).
set -euo pipefail
cd "$(dirname "$0")/../.."
seconds=${1:-120}
shift || true
target=${MP4PROBE_FUZZ_TARGET:-mp4}
export MP4PROBE_FUZZ_TARGET="$target"
work=${MP4PROBE_FUZZ_DIR:-/tmp/mp4probe-fuzz}/$target
mkdir -p "$work/corpus" "$work/seeds" "$work/artifacts"
case "$target" in
  mp4|mp4-parse)
    dict=Tests/Fuzz/mp4.dict
    cp SampleMedia/*.mp4 SampleMedia/*.m4a SampleMedia/*.mov SampleMedia/malformed/* "$work/seeds/" 2>/dev/null || true
    if [ -d ../shared/corpus ]; then
      find ../shared/corpus -type f ! -name '*.tsv' ! -name '*.md' -size -2M -exec cp {} "$work/seeds/" \;
    fi ;;
  http-head|range|cache-table)
    dict=Tests/Fuzz/$( [ "$target" = http-head ] && echo http || echo "$target" ).dict
    cp Tests/Fuzz/seeds/"$target"/* "$work/seeds/" ;;
  *) echo "run-fuzz.sh: unknown MP4PROBE_FUZZ_TARGET $target" >&2; exit 2 ;;
esac
# SwiftPM gives library targets only the sanitizer flags: instrument them for coverage too, and
# keep the linker from dropping the coverage sections of a release build (--gc-sections).
# MP4PROBE_FUZZ_ASAN=0 builds without AddressSanitizer (about 4x more inputs per second; traps,
# hangs and oversized allocations are still caught): for volume, after ASan runs for depth.
# -enable-testing: the network targets reach MP4IO's internal parsers with @testable import.
# MP4PROBE_FUZZ_BUILD=debug builds without optimisation: about 48 s instead of about 10 minutes
# from a clean clone here, for about a quarter of the inputs per second (mp4: 18/s against 81/s;
# http-head: 3,075/s against 12,914/s; 2026-11-27): what a short run in CI wants.
coverage=(-Xswiftc -sanitize-coverage=edge,inline-8bit-counters,pc-table,trace-cmp -Xlinker --no-gc-sections -Xswiftc -enable-testing)
configuration=${MP4PROBE_FUZZ_BUILD:-release}
# The time one input may take: 1 s in a release build; a debug build's inputs run about four
# times slower, so 4 s there (CI's debug run stopped on an input at 1 s, which 9.5 minutes of the
# same target here never came near: no input over 0.2 s, -report_slow_units=0.2).
timeout=${MP4PROBE_FUZZ_TIMEOUT:-$([ "$configuration" = debug ] && echo 4 || echo 1)}
# MP4PROBE_FUZZ_PREBUILT=1: the binary an earlier run of this script built, as it is (.ci/run
# fuzzes five targets with one build: a `swift build` before each run recompiled the binary
# now and then though nothing had changed, 54 and 80 s twice in five runs here, 2026-11-27).
prebuilt=${MP4PROBE_FUZZ_PREBUILT:-0}
if [ "${MP4PROBE_FUZZ_ASAN:-1}" = 0 ]; then
  scratch=.build-fuzz-plain
  [ "$prebuilt" = 1 ] || MP4PROBE_FUZZ=1 swift build -c "$configuration" --product MP4Fuzz --sanitize=fuzzer -Xswiftc -sanitize=fuzzer "${coverage[@]}" \
    --scratch-path "$scratch-$configuration" >/dev/null
else
  scratch=.build-fuzz
  [ "$prebuilt" = 1 ] || MP4PROBE_FUZZ=1 swift build -c "$configuration" --product MP4Fuzz --sanitize=fuzzer --sanitize=address "${coverage[@]}" \
    --scratch-path "$scratch-$configuration" >/dev/null
fi
scratch="$scratch-$configuration"
export SWIFT_BACKTRACE=enable=no
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0:allocator_may_return_null=1}
echo "fuzzing $target for $seconds s"
touch "$work/run-started"
"$scratch/$configuration/MP4Fuzz" "$work/corpus" "$work/seeds" -dict="$dict" \
  -max_total_time="$seconds" -timeout="$timeout" -rss_limit_mb=2048 -malloc_limit_mb=512 -max_len=${MP4PROBE_FUZZ_MAX_LEN:-16384} \
  -artifact_prefix="$work/artifacts/" -print_final_stats=1 "$@" 2>&1 | tee "$work/last-run.log" | grep -E "^#[0-9]+ +(pulse|DONE|NEW)|stat::|ERROR|SUMMARY|Test unit" | tail -25 \
  || {
    status=$?
    # The input that stopped the run, printed: a CI machine's /tmp is gone after the run.
    for artifact in $(find "$work/artifacts" -type f -newer "$work/run-started" -size -65k); do
      echo "artifact $(basename "$artifact") (base64; decode with base64 -d):"; base64 -w 100 "$artifact"
    done
    exit "$status"
  }
