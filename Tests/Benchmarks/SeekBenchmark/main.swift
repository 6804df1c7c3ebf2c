// Benchmark of the seek index: parse moov, build every track's sample table, answer random
// seek queries. Run by Tests/Benchmarks/seek-benchmark.sh, which measures ffprobe on the same
// file in the same run and prints the ratios. Not a test: it never fails on timing.
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import MP4Core
import MP4IO

func now() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
}

func peakResidentBytes() -> Int {
    var usage = rusage()
    #if canImport(Glibc)
    getrusage(RUSAGE_SELF.rawValue, &usage)
    #else
    getrusage(RUSAGE_SELF, &usage)
    #endif
    #if canImport(Darwin)
    return Int(usage.ru_maxrss)
    #else
    return Int(usage.ru_maxrss) * 1024
    #endif
}

let arguments = CommandLine.arguments
guard arguments.count >= 2 else {
    print("usage: SeekBenchmark FILE [queries]")
    exit(2)
}
let path = arguments[1]
let queries = arguments.count > 2 ? Int(arguments[2]) ?? 10_000 : 10_000
let baselineRSS = peakResidentBytes()

let started = now()
let file = try await MP4File.open(try FileSource(path: path))
let opened = now()
let rssAfterOpen = peakResidentBytes()
let planner = SeekPlanner(file: file)
let indexed = now()
let rssAfterIndex = peakResidentBytes()

var tableBytes = 0
file.movieBox?.walk(path: BoxPath()) { node, _ in
    if let table = node.sampleTable { tableBytes += table.entryBytes.count }
    return .descend
}
let samples = planner.tracks.map(\.samples.sampleCount)
guard let main = planner.mainTrack else { print("no samples"); exit(1) }
let duration = main.presentationTime(of: main.samples.sampleCount - 1)

var random = SystemRandomNumberGenerator()
var checksum: UInt64 = 0
let queryStart = now()
for _ in 0..<queries {
    let plan = try planner.plan(at: Double.random(in: 0..<duration, using: &random))
    checksum &+= plan.startOffset
}
let queryEnd = now()
var windowChecksum: UInt64 = 0
let windowStart = now()
for _ in 0..<min(1000, queries) {
    let plan = try planner.plan(at: Double.random(in: 0..<(duration - 10), using: &random), duration: 10)
    windowChecksum &+= UInt64(plan.ranges.count)
}
let windowEnd = now()

print("file            \(path) (\(file.layout.fileSize) bytes)")
print("moov            \(file.layout.movieBox?.size ?? 0) bytes; sample tables \(tableBytes) bytes; samples per track \(samples)")
print("open+parse      \(String(format3(opened - started))) s")
print("index           \(String(format3(indexed - opened))) s")
print("open+index      \(String(format3(indexed - started))) s")
print("peak RSS        \(peakResidentBytes() / 1024) KiB (process baseline \(baselineRSS / 1024) KiB); \(String(format2(Double(peakResidentBytes() - baselineRSS) / Double(max(tableBytes, 1))))) x the tables above baseline")
print("peak RSS stages after open \(rssAfterOpen / 1024) KiB, after index \(rssAfterIndex / 1024) KiB")
print("seek (point)    \(String(format2((queryEnd - queryStart) / Double(queries) * 1e6))) us per query (\(queries) queries)")
print("seek (10 s)     \(String(format2((windowEnd - windowStart) / Double(min(1000, queries)) * 1e6))) us per query with its byte ranges (\(min(1000, queries)) queries)")
print("checksum        \(checksum) \(windowChecksum)")
print("RESULT open_index_s=\(indexed - started) point_query_us=\((queryEnd - queryStart) / Double(queries) * 1e6) peak_rss_kib=\(peakResidentBytes() / 1024) table_bytes=\(tableBytes)")

func format3(_ v: Double) -> String { fixed(v, 3) }
func format2(_ v: Double) -> String { fixed(v, 2) }
func fixed(_ v: Double, _ digits: Int) -> String {
    var scale = 1.0
    for _ in 0..<digits { scale *= 10 }
    let r = (v * scale).rounded() / scale
    return "\(r)"
}
