import Testing
@testable import MP4Core
import MP4TestSupport

/// Checks sample tables and seek plans against ffprobe's packets
/// (Tests/Goldens/ffprobe-packets/*.csv, recorded by record-ffprobe-packets.sh).
///
/// Systematic differences, tested as such: ffprobe's timestamps are ours plus the track's
/// `Timeline.ffprobeShift` (it applies the first edit); ffprobe reports PCM (`sowt`) in
/// packets of one chunk each, so PCM tracks are compared chunk by chunk.
@Suite struct SampleTableOracleTests {
    struct Packet { var stream: Int; var pts: Int64; var dts: Int64; var size: UInt64; var pos: UInt64; var key: Bool }

    static let files = FileSystem.list(Fixtures.packageRoot + "/Tests/Goldens/ffprobe-packets").map { String($0.dropLast(4)) }.sorted()

    static func packets(_ name: String) -> [Packet] {
        guard let bytes = FileSystem.read(Fixtures.packageRoot + "/Tests/Goldens/ffprobe-packets/\(name).csv") else { return [] }
        return String(decoding: bytes, as: UTF8.self).split(whereSeparator: \.isNewline).compactMap { line in
            let f = line.split(separator: ",").map(String.init)
            guard f.count >= 6, let s = Int(f[0]), let pts = Int64(f[1]), let dts = Int64(f[2]), let size = UInt64(f[3]), let pos = UInt64(f[4]) else { return nil }
            return Packet(stream: s, pts: pts, dts: dts, size: size, pos: pos, key: f[5].hasPrefix("K"))
        }
    }

    static func planner(_ name: String) async throws -> SeekPlanner {
        let bytes = try #require(FileSystem.read(Fixtures.sample(name)))
        let source = MemorySource(bytes, name: name)
        return try await SeekPlanner.index(try await MP4File.open(source), from: source)
    }

    @Test func everySampleFileHasAGolden() {
        #expect(Self.files == Fixtures.sampleFiles.sorted())
    }

    @Test(arguments: files)
    func samplesMatchFFprobePackets(name: String) async throws {
        let planner = try await Self.planner(name)
        let packets = Self.packets(name)
        #expect(planner.findings.filter { $0.severity != .info }.isEmpty, "\(planner.findings)")
        for (stream, indexed) in planner.tracks.enumerated() {
            let expected = packets.filter { $0.stream == stream }
            let shift = indexed.timeline.ffprobeShift
            if indexed.track.sampleEntries.first?.format == "sowt" {
                // PCM: ffprobe cuts chunks into packets of 1024 samples; the bytes must agree.
                var ours: [Range<UInt64>] = []
                indexed.samples.forEachSample { s in
                    ours.append(s.byteOffset..<s.endOffset)
                    return true
                }
                let theirs = expected.map { $0.pos..<($0.pos + $0.size) }
                #expect(SeekPlanner.merge(ours) == SeekPlanner.merge(theirs), "\(name) PCM byte ranges")
                #expect(indexed.samples.sampleCount == 96000)
                continue
            }
            #expect(indexed.samples.sampleCount == expected.count, "\(name) track \(stream)")
            var mismatches = 0
            indexed.samples.forEachSample { s in
                guard s.index < expected.count else { return false }
                let p = expected[s.index]
                if s.byteOffset != p.pos || UInt64(s.byteCount) != p.size || s.isSync != p.key || s.decodeTime + shift != p.dts || s.compositionTime + shift != p.pts {
                    mismatches += 1
                    if mismatches <= 3 { Issue.record("\(name) track \(stream) sample \(s.index): ours \(s) vs ffprobe \(p) (shift \(shift))") }
                }
                return true
            }
            #expect(mismatches == 0)
            // Random access agrees with the sequential walk.
            for index in stride(from: 0, to: indexed.samples.sampleCount, by: 7) {
                let s = try #require(indexed.samples.sample(at: index))
                #expect(s.byteOffset == expected[index].pos && s.decodeTime + shift == expected[index].dts)
            }
        }
    }

    /// The byte-position oracle of docs/peers.md, computed from ffprobe's packets, as a lower
    /// bound: a plan must contain at least what it names (plans now also hold the pre-roll and
    /// the samples playing at the keyframe time, which the oracle leaves out; whether a plan
    /// is enough is decided by decoding it, in SeekPlanDecodeTests). Keyframe = the main
    /// stream's key packet with the largest pts ≤ T (the first if none); start = smallest pos
    /// among packets of all streams with dts ≥ the keyframe's dts (in seconds); end = per
    /// stream, the largest pos+size among packets up to the last one with pts ≤ T + D.
    @Test(arguments: files.filter { $0 != "quicktime.mov" })
    func seekPlansMatchTheFFprobeOracle(name: String) async throws {
        let planner = try await Self.planner(name)
        let packets = Self.packets(name)
        let main = try #require(planner.mainTrack)
        let mainStream = try #require(planner.tracks.firstIndex { $0.track.trackID == main.track.trackID })
        let scales = planner.tracks.map { Double($0.timeline.mediaTimescale) }
        let duration = main.presentationTime(of: main.samples.sampleCount - 1)
        let layout = try await TopLevelScanner.scan(MemorySource(try #require(FileSystem.read(Fixtures.sample(name)))))
        let mdatPayloads = layout.mediaDataBoxes.map { ($0.offset + UInt64($0.header.headerSize))..<$0.availableEnd }
        for step in 0..<60 {
            let time = duration * Double(step) / 60
            let window = step % 3 == 0 ? 0.0 : 0.4
            let plan = try planner.plan(at: time, duration: window)
            let keys = packets.filter { $0.stream == mainStream && $0.key }
            let keyframe = keys.last { Double($0.pts) / scales[mainStream] <= time + 1e-9 } ?? keys[0]
            let keyDTS = Double(keyframe.dts) / scales[mainStream]
            #expect(abs(plan.keyframeTime - Double(keyframe.pts) / scales[mainStream]) < 1e-6, "\(name) @\(time): keyframe")
            let needed = packets.filter { Double($0.dts) / scales[$0.stream] >= keyDTS - 1e-9 }
            let oracleStart = needed.map(\.pos).min() ?? 0
            let windowEnd = max(time, plan.keyframeTime) + window
            var oracleEnd: UInt64 = 0
            for stream in 0..<planner.tracks.count {
                let inStream = packets.filter { $0.stream == stream }
                guard let lastShown = inStream.lastIndex(where: { Double($0.pts) / scales[stream] <= windowEnd + 1e-9 }) else { continue }
                oracleEnd = max(oracleEnd, inStream[...lastShown].map { $0.pos + $0.size }.max() ?? 0)
            }
            #expect(plan.startOffset <= oracleStart, "\(name) @\(time): start \(plan.startOffset) > oracle \(oracleStart)")
            #expect(plan.endOffset >= oracleEnd, "\(name) @\(time): end \(plan.endOffset) < oracle \(oracleEnd)")
            // Every byte range is non-empty and lies inside one mdat payload.
            for range in plan.ranges {
                #expect(range.lowerBound < range.upperBound)
                #expect(mdatPayloads.contains { $0.lowerBound <= range.lowerBound && range.upperBound <= $0.upperBound }, "\(name) @\(time): \(range) outside mdat")
            }
        }

    }

    @Test func alignmentModes() async throws {
        let planner = try await Self.planner("faststart.mp4")
        let previous = try planner.plan(at: 1.5)
        let exact = try planner.plan(at: 1.5, alignment: .exactSample)
        #expect(previous.keyframeTime == 1.0)
        #expect(try planner.plan(at: 0.5, alignment: .nextSync).keyframeTime == 1.0)
        #expect(throws: MP4Error.self) { try planner.plan(at: 1.5, alignment: .nextSync) }  // no keyframe after 1.0 s
        #expect(abs(exact.keyframeTime - 1.48) < 1e-9 && exact.keyframeTime <= 1.5)
        #expect(throws: MP4Error.self) { try planner.plan(at: 99) }
        // The walk is bounded: 1.5 s of this file is 23 video + 71 audio samples.
        let file = try await MP4File.open(MemorySource(try #require(FileSystem.read(Fixtures.sample("faststart.mp4")))))
        let bounded = SeekPlanner(file: file, limits: ParseLimits(maxSamplesPerQuery: 50))
        do {
            _ = try bounded.plan(at: 0, duration: 1.5)
            Issue.record("walked past the limit")
        } catch let e as MP4Error {
            #expect(e.kind == .limitExceeded)
        }
        #expect((try? bounded.plan(at: 0)) != nil)
        #expect(throws: MP4Error.self) { try planner.plan(at: -1) }
    }
}
