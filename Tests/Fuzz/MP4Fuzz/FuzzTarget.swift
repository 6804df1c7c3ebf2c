// libFuzzer entry point for the parse path: top-level scan, moov parse, sample tables and
// fragments, seek plans, the faststart plan and the check. Built only by
// Tests/Fuzz/run-fuzz.sh (`--sanitize=fuzzer --sanitize=address`); libFuzzer provides `main`.
import Dispatch
import MP4Core

/// Bounds tighter than the defaults, so that one input stays well under a second and a few
/// hundred megabytes even when it claims huge tables. Coverage instrumentation (trace-cmp)
/// makes table walks ~30x slower than a release build: a `trun` of 1.2 million default-size
/// samples took 1.4 s here (40 ms in the release CLI), hence 200,000 samples per index/query.
let fuzzLimits = ParseLimits(maxMovieBoxSize: 8 << 20, maxOtherBoxSize: 4 << 20, maxMetadataBytes: 16 << 20, maxBoxCount: 200_000, maxTopLevelBoxes: 100_000, maxSamplesPerQuery: 200_000, maxFragmentSamples: 200_000)

func exercise(_ bytes: [UInt8]) async {
    let source = MemorySource(bytes, name: "fuzz")
    guard let file = try? await MP4File.open(source, options: MP4File.Options(limits: fuzzLimits, loadsAllBoxes: true)) else { return }
    _ = file.kind
    _ = file.movie?.tracks.map { ($0.sampleEntries.map(\.codecString), $0.bitRate, $0.durationSeconds) }
    if let planner = try? await SeekPlanner.index(file, from: source, limits: fuzzLimits) {
        for indexed in planner.tracks {
            var walked = 0
            indexed.samples.forEachSample { _ in walked += 1; return walked < 5_000 }
            _ = indexed.samples.sample(at: indexed.samples.sampleCount - 1)
            _ = indexed.samples.lastSample(decodedAtOrBefore: 1_000)
        }
        for time in [0.0, 0.5, 3.0] {
            _ = try? planner.plan(at: time, duration: 1, alignment: .previousSync)
            _ = try? planner.plan(at: time, alignment: .exactSample)
        }
    }
    if file.isFragmented {
        // The sidx/mfra-located path reads only some moofs.
        _ = try? await SeekPlanner.plan(file, from: source, at: 1.0, duration: 0.5, limits: fuzzLimits)
    }
    _ = try? await FaststartPlan.make(file, source: source)
    _ = FileCheck.evaluate(file, policy: CheckPolicy(maxKeyframeInterval: 1, maxInterleave: 1), limits: fuzzLimits)
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let done = DispatchSemaphore(value: 0)
    Task {
        await exercise(bytes)
        done.signal()
    }
    done.wait()
    return 0
}
