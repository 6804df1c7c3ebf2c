import Testing
@testable import MP4Core
import MP4TestSupport

/// `FileCheck`: each policy with a file that passes and one that fails, integrity on broken
/// files, and agreement with the corpus manifest.
@Suite struct FileCheckTests {
    typealias B = BoxBuilder

    static func check(_ name: String, _ policy: CheckPolicy = CheckPolicy()) async throws -> FileCheck {
        let bytes = try #require(FileSystem.read(Fixtures.sample(name)))
        return await FileCheck.check(MemorySource(bytes, name: name), policy: policy)
    }

    static func ids(_ check: FileCheck) -> Set<String> { Set(check.findings.filter { $0.severity == .error }.map(\.id)) }

    @Test func faststartAndStartupBytes() async throws {
        let fast = try await Self.check("faststart.mp4")
        #expect(fast.status == .pass && fast.metrics.faststart == true && fast.metrics.startupBytes == 2950)
        let slow = try await Self.check("moov-at-end.mp4")
        #expect(slow.status == .fail && Self.ids(slow) == ["not-faststart"] && slow.failsOnlyOnLayout)
        // Core messages never name CLI commands (the CLI adds the command).
        #expect(slow.findings[0].message.contains("move moov to the front") && !slow.findings[0].message.contains("mp4probe"))
        #expect(try await Self.check("moov-at-end.mp4", CheckPolicy(requireFaststart: false)).status == .pass)
        #expect(try await Self.check("faststart.mp4", CheckPolicy(maxStartupBytes: 10_000)).status == .pass)
        let tight = try await Self.check("faststart.mp4", CheckPolicy(maxStartupBytes: 1000))
        #expect(Self.ids(tight) == ["startup-bytes"] && tight.failsOnlyOnLayout)
    }

    @Test func keyframeInterval() async throws {
        let hevc = try await Self.check("hevc.mp4")
        let interval = try #require(hevc.metrics.maxKeyframeInterval)
        #expect(abs(interval - 1.96) < 0.01, "\(interval)")
        #expect(try await Self.check("hevc.mp4", CheckPolicy(maxKeyframeInterval: 2.5)).status == .pass)
        let failed = try await Self.check("hevc.mp4", CheckPolicy(maxKeyframeInterval: 1.5))
        #expect(Self.ids(failed) == ["keyframe-interval"] && !failed.failsOnlyOnLayout)
    }

    /// Two tracks of ten 1-second samples each: video's single chunk, then audio's.
    static func badlyInterleaved() -> [UInt8] {
        let ftyp = B.box("ftyp", Array("isom".utf8) + B.u32(0) + Array("isom".utf8))
        let payload = [UInt8](repeating: 7, count: 200)
        func trak(_ id: UInt32, _ handler: String, chunkAt: UInt32) -> [UInt8] {
            let entry = handler == "vide"
                ? B.box("avc1", [UInt8](repeating: 0, count: 6) + [0, 1] + [UInt8](repeating: 0, count: 16) + [1, 64, 0, 240] + [UInt8](repeating: 0, count: 50))
                : B.box("mp4a", [UInt8](repeating: 0, count: 6) + [0, 1] + [UInt8](repeating: 0, count: 8) + [0, 2, 0, 16, 0, 0, 0, 0] + B.u32(48000 << 16))
            return B.box("trak", children: [
                B.fullBox("tkhd", flags: 3, B.u32(0) + B.u32(0) + B.u32(id) + B.u32(0) + B.u32(10_000) + [UInt8](repeating: 0, count: 60)),
                B.box("mdia", children: [
                    B.fullBox("mdhd", B.u32(0) + B.u32(0) + B.u32(1000) + B.u32(10_000) + B.u32(0)),
                    B.fullBox("hdlr", B.u32(0) + Array(handler.utf8) + [UInt8](repeating: 0, count: 13)),
                    B.box("minf", children: [B.box("stbl", children: [
                        B.fullBox("stsd", B.u32(1) + entry),
                        B.fullBox("stts", B.u32(1) + B.u32(10) + B.u32(1000)),
                        B.fullBox("stsc", B.u32(1) + B.u32(1) + B.u32(10) + B.u32(1)),
                        B.fullBox("stsz", B.u32(10) + B.u32(10)),
                        B.fullBox("stco", B.u32(1) + B.u32(chunkAt)),
                    ])]),
                ]),
            ])
        }
        func moov(_ mdatPayload: UInt32) -> [UInt8] {
            B.box("moov", children: [
                B.fullBox("mvhd", B.u32(0) + B.u32(0) + B.u32(1000) + B.u32(10_000) + [UInt8](repeating: 0, count: 80)),
                trak(1, "vide", chunkAt: mdatPayload), trak(2, "soun", chunkAt: mdatPayload + 100),
            ])
        }
        let mdatPayload = UInt32(ftyp.count + moov(0).count + 8)
        return ftyp + moov(mdatPayload) + B.box("mdat", payload)
    }

    @Test func interleave() async throws {
        let bad = await FileCheck.check(MemorySource(Self.badlyInterleaved(), name: "bad"), policy: CheckPolicy(maxInterleave: 2))
        #expect(bad.metrics.interleaveSeconds == 10 && bad.metrics.interleaveBytes == 100, "\(bad.metrics)")
        #expect(Self.ids(bad) == ["interleave"])
        let good = try await Self.check("faststart.mp4", CheckPolicy(maxInterleave: 2))
        let seconds = try #require(good.metrics.interleaveSeconds)
        #expect(good.status == .pass && seconds < 0.1, "\(seconds)")
    }

    @Test func codecsBrandsFragmentsDurationResolution() async throws {
        #expect(try await Self.check("faststart.mp4", CheckPolicy(allowCodecs: ["avc1", "mp4a"])).status == .pass)
        #expect(try await Self.check("faststart.mp4", CheckPolicy(allowCodecs: ["avc1.64", "mp4a.40.2"])).status == .pass)
        #expect(Self.ids(try await Self.check("faststart.mp4", CheckPolicy(allowCodecs: ["hvc1", "mp4a"]))) == ["codec-not-allowed"])
        #expect(try await Self.check("faststart.mp4", CheckPolicy(allowBrands: ["isom"])).status == .pass)
        #expect(Self.ids(try await Self.check("faststart.mp4", CheckPolicy(allowBrands: ["mp42"]))) == ["brand-not-allowed"])
        #expect(try await Self.check("fragmented.mp4").status == .pass)
        #expect(Self.ids(try await Self.check("fragmented.mp4", CheckPolicy(allowFragmented: false))) == ["fragmented"])
        #expect(try await Self.check("faststart.mp4", CheckPolicy(maxDuration: 3)).status == .pass)
        #expect(Self.ids(try await Self.check("faststart.mp4", CheckPolicy(maxDuration: 1))) == ["duration"])
        #expect(try await Self.check("faststart.mp4", CheckPolicy(minResolution: "320x240", maxResolution: "1920x1080")).status == .pass)
        #expect(Self.ids(try await Self.check("faststart.mp4", CheckPolicy(minResolution: "640x360"))) == ["resolution"])
        #expect(Self.ids(try await Self.check("faststart.mp4", CheckPolicy(maxResolution: "160x120"))) == ["resolution"])
    }

    @Test func integrity() async throws {
        let truncated = try await Self.check("malformed/truncated-in-mdat.mp4")
        #expect(Self.ids(truncated).isSuperset(of: ["chunk-outside-mdat", "mdat-past-eof"]) && !truncated.failsOnlyOnLayout)
        #expect(Self.ids(try await Self.check("malformed/stsz-count-4-billion.mp4")).contains("missing-sample-sizes"))
        #expect(Self.ids(try await Self.check("malformed/empty.mp4")) == ["not-mp4"])
        // A chunk offset into moov instead of mdat.
        var bytes = Self.badlyInterleaved()
        let stco = try #require((0..<bytes.count - 4).first { bytes[$0..<($0 + 4)] == ArraySlice("stco".utf8) })
        bytes.replaceSubrange((stco + 12)..<(stco + 16), with: B.u32(40))
        let inMoov = await FileCheck.check(MemorySource(bytes, name: "x"))
        #expect(Self.ids(inMoov) == ["chunk-outside-mdat"], "\(inMoov.findings)")
        // Unreadable.
        let missing = await FileCheck.check(FailingSource())
        #expect(missing.status == .ioError && Self.ids(missing) == ["io-error"])
    }

    struct FailingSource: ByteSource {
        var name: String { "failing" }
        func length() async throws -> UInt64 { throw MP4Error(.io, "no such file") }
        func read(_ range: Range<UInt64>) async throws -> [UInt8] { throw MP4Error(.io, "no such file") }
    }

    @Test func defaultsAndResolutionParsing() throws {
        // Policy files are decoded in the CLI tests (JSONDecoder is Foundation's).
        let policy = CheckPolicy()
        #expect(policy.requireFaststart && policy.allowFragmented && policy.maxKeyframeInterval == nil)
        let parsed = try #require(CheckPolicy.parseResolution("1280x720"))
        #expect(parsed.width == 1280 && parsed.height == 720)
        #expect(CheckPolicy.parseResolution("1280") == nil && CheckPolicy.parseResolution("0x5") == nil)
    }

    /// Over the shared corpus: verdicts agree with the manifest's layout columns, and every
    /// malformed file fails with an error finding.
    @Test(.enabled(if: Fixtures.hasCorpus, Fixtures.noCorpus)) func corpusVerdictsAgreeWithTheManifest() async throws {
        let corpus = try #require(Fixtures.sharedCorpus)
        let entries = CorpusTests.entries
        #expect(entries.count == 143)
        var malformedFailing = 0
        for entry in entries {
            guard let bytes = FileSystem.read(corpus + "/" + entry.file) else { continue }
            let check = await FileCheck.check(MemorySource(bytes, name: entry.file))
            if entry.category == "malformed" {
                #expect(check.status == .fail && !Self.ids(check).isEmpty, "\(entry.file) passed")
                if check.status == .fail { malformedFailing += 1 }
                continue
            }
            switch entry.placement {
            case "no":
                #expect(check.metrics.faststart == false && Self.ids(check).contains("not-faststart"), "\(entry.file)")
            case "yes":
                if entry.fragmented != "1" { #expect(check.metrics.faststart == true, "\(entry.file)") }
                #expect(!Self.ids(check).contains("not-faststart"))
            default:
                #expect(!Self.ids(check).contains("not-faststart"))
            }
        }
        #expect(malformedFailing == 40)
    }

    /// Fragmented files get the duration, keyframe-interval and interleave rules too (issue
    /// 15): a 2.08 s file with 1 s GOPs used to pass --max-duration 1 --max-keyframe-interval
    /// 0.5 with null metrics although its 145 samples were checked.
    @Test func fragmentedFilesMeetTheTimingRules() async throws {
        let check = try await Self.check("fragmented.mp4", CheckPolicy(maxKeyframeInterval: 0.5, maxInterleave: 0.01, maxDuration: 1))
        #expect(check.status == .fail)
        #expect(Set(check.findings.map(\.id)) == ["keyframe-interval", "interleave", "duration"], "\(check.findings)")
        #expect(check.metrics.durationSeconds.map { abs($0 - 2.08) < 0.001 } == true)
        #expect(check.metrics.maxKeyframeInterval == 1.0 && check.metrics.samplesChecked == 145)
        #expect(check.findings.first { $0.id == "interleave" }?.message.contains("frag_duration") == true)
        #expect(try await Self.check("fragmented.mp4", CheckPolicy(maxKeyframeInterval: 2, maxDuration: 3)).status == .pass)
    }

    /// What mp4probe knows is wrong reaches `check` (issue 63): the three single edits players
    /// choke on fail plain `check` (an stsc from chunk 2: ffmpeg logged 407 decode errors;
    /// moofs without mvex: read as a film of no samples; a fragment of a track with no trex:
    /// ffmpeg fails), and an stss out of order is a warning that `--conformance` fails. Before,
    /// `check` passed all four.
    @Test func whatTheTablesSayReachesCheck() async throws {
        func edited(_ name: String, _ type: String, at offset: Int, _ value: [UInt8], occurrence: Int = 1) throws -> [UInt8] {
            var bytes = try #require(FileSystem.read(Fixtures.sample(name)))
            let start = try ConformanceTests.box(type, in: bytes, occurrence: occurrence) + offset
            bytes.replaceSubrange(start..<(start + value.count), with: value)
            return bytes
        }
        func check(_ bytes: [UInt8], _ policy: CheckPolicy = CheckPolicy()) async -> FileCheck {
            await FileCheck.check(MemorySource(bytes, name: "edited.mp4"), policy: policy)
        }
        // The first stsc entry's first_chunk (after size, type, version and flags, entry count).
        let stsc = await check(try edited("faststart.mp4", "stsc", at: 16, B.u32(2)))
        #expect(stsc.status == .fail && Self.ids(stsc).contains("bad-stsc-entry"), "\(stsc.findings)")
        let noMvex = await check(try edited("fragmented.mp4", "mvex", at: 4, Array("free".utf8)))
        #expect(noMvex.status == .fail && Self.ids(noMvex).contains("fragments-undeclared"), "\(noMvex.findings)")
        // trex's track_ID (after size, type, version and flags) names a track that is not there.
        let noTrex = await check(try edited("fragmented.mp4", "trex", at: 12, B.u32(99)))
        #expect(noTrex.status == .fail && Self.ids(noTrex).contains("missing-trex"), "\(noTrex.findings)")
        // The video track's two stss entries swapped (1, 26 -> 26, 1).
        let unsorted = try edited("faststart.mp4", "stss", at: 16, B.u32(26) + B.u32(1))
        let plain = await check(unsorted)
        #expect(plain.status == .pass && plain.findings.contains { $0.id == "unsorted-stss" && $0.severity == .warning }, "\(plain.findings)")
        let strict = await check(unsorted, CheckPolicy(conformance: true))
        #expect(strict.status == .fail && Self.ids(strict).contains("unsorted-stss"), "\(strict.findings)")
        // The films as written pass.
        for name in ["faststart.mp4", "fragmented.mp4"] { #expect(try await Self.check(name).status == .pass, "\(name)") }
    }
}
