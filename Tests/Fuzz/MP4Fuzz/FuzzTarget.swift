// libFuzzer entry point for the parse path (top-level scan, moov parse, sample tables and
// fragments, seek plans, the faststart plan and the check) and for the CLI's output paths
// (every report, text and JSON, the error renderer, and the inspector page's data). Built only by
// Tests/Fuzz/run-fuzz.sh (`--sanitize=fuzzer --sanitize=address`); libFuzzer provides `main`.
import Dispatch
import Foundation
import MP4Core
import MP4ProbeCLI
import MP4Report

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
    if fuzzTarget != "mp4-parse" { await exerciseInspector(file, source) }
}

/// The inspector page of the same file (`mp4probe inspect`, serve's `_/inspect`): its data
/// is bounded whatever the file says (InspectorCorpusTests' bound: a page under 4 MiB) and
/// cannot end the page's `<script>` element.
func exerciseInspector(_ file: MP4File, _ source: MemorySource) async {
    let data = await InspectorData.gather(file, from: source, limits: fuzzLimits)
    let json = data.json()
    precondition(!json.contains("</"), "the page data holds '</': it could end its script element")
    let page = InspectorPage.html(data)
    precondition(page.utf8.count < 4 << 20, "an inspector page of \(page.utf8.count) bytes for a \(file.layout.fileSize)-byte input")
}

/// Where the CLI's output goes: counted, never kept. A single write above 1 MiB means a report
/// was built whole instead of streamed (issue 13 item 2): that is a finding, so it traps.
final class BoundedSink: TextOutput, @unchecked Sendable {
    private let lock = NSLock()
    private var total = 0
    func write(_ text: String) {
        let count = text.utf8.count
        precondition(count <= 1 << 20, "one write of \(count) bytes: the output is not streamed")
        lock.lock()
        total += count
        lock.unlock()
        precondition(total <= 256 << 20, "more than 256 MiB of output for one input")
    }
}

/// The input as a file (in /dev/shm when there is one: no disk I/O per input).
let fuzzPath: String = {
    let directory = FileManager.default.fileExists(atPath: "/dev/shm") ? "/dev/shm" : NSTemporaryDirectory()
    return directory + "/mp4probe-fuzz-\(ProcessInfo.processInfo.processIdentifier).mp4"
}()

/// The command lines whose output paths are fuzzed, with bounds matching `fuzzLimits`.
let fuzzCommands: [[String]] = {
    let limits = ["--max-moov-size", "8M", "--max-box-size", "4M", "--max-metadata", "16M", "--max-boxes", "200000", "--max-samples", "200000", "--max-fragment-samples", "200000"]
    return [
        ["info"], ["info", "--json"], ["boxes"], ["boxes", "--full", "--json", "--compact", "--entries", "2000"], ["boxes", "--full", "--entries", "2000"],
        ["samples", "--limit", "2000"], ["samples", "--json", "--range", "0-1999"], ["seek", "--json"], ["seek"],
        ["faststart", "--dry-run", "--json"], ["check", "--format", "jsonl", "--max-keyframe-interval", "1"],
    ].map { command in
        var arguments = command + limits
        if command.first == "seek" { arguments.insert(contentsOf: [fuzzPath, "0.5", "--duration", "1"], at: 1) } else { arguments.append(fuzzPath) }
        if command.first == "faststart" || command.first == "check" { arguments.removeAll { ["--max-box-size", "4M", "--max-metadata", "16M"].contains($0) } }
        return arguments
    }
}()

func exerciseCLI(_ bytes: [UInt8]) async {
    guard FileManager.default.createFile(atPath: fuzzPath, contents: Data(bytes)) else { return }
    for arguments in fuzzCommands {
        _ = await MP4Probe.run(arguments, output: BoundedSink(), errors: BoundedSink())
    }
}

/// The target of this run (`MP4PROBE_FUZZ_TARGET`, set by run-fuzz.sh): `mp4` (the parse
/// path and the CLI's output paths), `mp4-parse` (the parse path alone: about 10x the inputs
/// per second), `http-head`, `range`, `cache-table` (NetworkFuzzing.swift).
let fuzzTarget = ProcessInfo.processInfo.environment["MP4PROBE_FUZZ_TARGET"] ?? "mp4"

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    switch fuzzTarget {
    case "http-head": exerciseHTTPHead(bytes); return 0
    case "range": exerciseRange(bytes); return 0
    case "cache-table": exerciseCacheTable(bytes); return 0
    default: break
    }
    let done = DispatchSemaphore(value: 0)
    Task {
        await exercise(bytes)
        if fuzzTarget != "mp4-parse" { await exerciseCLI(bytes) }
        done.signal()
    }
    done.wait()
    return 0
}
