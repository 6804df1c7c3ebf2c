import Foundation
import Testing
@testable import MP4Core
import MP4TestSupport

/// Issue 45 item 3 (the policy keys): every ingest rule by a film ffmpeg makes to break it,
/// each failing with exactly its finding (which says the value and the limit), and one film
/// that passes them all.
@Suite(.requires("ffmpeg"), .hangGuard)
struct IngestRulesTests {
    /// Every ingest key set: 8-bit 4:2:0 progressive, at most 60 fps and constant, at most 2
    /// B-frames in a row, closed GOPs, an offset edit list at most, 8 Mb/s, 16 Mb/s over a
    /// GOP, 50 MB, stereo or 5.1 at 48 or 96 kHz, not turned by the track header.
    static var strict: CheckPolicy {
        var policy = CheckPolicy()
        policy.maxBitDepth = 8
        policy.allowChroma = ["4:2:0"]
        policy.allowInterlaced = false
        policy.allowRotation = false
        policy.maxFrameRate = 60
        policy.requireConstantFrameRate = true
        policy.maxConsecutiveBFrames = 2
        policy.requireClosedGOP = true
        policy.editLists = "offset"
        policy.maxVideoBitRate = 8_000_000
        policy.maxGOPBitRate = 16_000_000
        policy.maxFileSize = 50_000_000
        policy.allowAudioChannels = [2, 6]
        policy.allowAudioSampleRates = [48000, 96000]
        return policy
    }

    static func ids(_ directory: String, _ name: String, _ arguments: [String], policy: CheckPolicy = strict,
                    source: [String] = CodecFactsTests.source + ["-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000", "-ac", "2", "-t", "4"]) async throws -> [String] {
        _ = try await CodecFactsTests.film(directory, name, arguments + ["-c:a", "aac", "-movflags", "+faststart"], source: source)
        let bytes = try #require(FileSystem.read(directory + "/" + name))
        let check = await FileCheck.check(MemorySource(bytes, name: name), policy: policy)
        return check.findings.filter { $0.severity == .error }.map(\.id).sorted()
    }

    @Test(.enabled(if: !Executables.underSanitizer, "encodes films with ffmpeg: the plain run only (in one AddressSanitizer CI run with these encodes beside them, URLSession deadline tests overran)"))
    func eachRuleByAFilmThatBreaksIt() async throws {
        let directory = FileSystem.temporaryDirectory("mp4probe-ingest")
        defer { FileSystem.removeDirectory(directory) }
        let x264 = ["-c:v", "libx264", "-bf", "2", "-g", "25"]
        #expect(try await Self.ids(directory, "pass.mp4", x264) == [])
        #expect(try await Self.ids(directory, "10bit.mp4", x264 + ["-pix_fmt", "yuv420p10le"]) == ["bit-depth"])
        #expect(try await Self.ids(directory, "422.mp4", x264 + ["-pix_fmt", "yuv422p"]) == ["chroma-not-allowed"])
        #expect(try await Self.ids(directory, "interlaced.mp4", x264 + ["-flags", "+ildct+ilme", "-top", "1"]) == ["interlaced"])
        // Turned as a phone records portrait video (ffmpeg writes the matrix on a stream copy).
        let ffmpeg = try #require(Executables.find("ffmpeg"))
        _ = await Executables.runOffPool(ffmpeg, ["-v", "error", "-nostdin", "-y", "-i", directory + "/pass.mp4", "-c", "copy", "-metadata:s:v:0", "rotate=90", "-movflags", "+faststart", directory + "/rotated.mp4"])
        let rotated = await FileCheck.check(MemorySource(try #require(FileSystem.read(directory + "/rotated.mp4")), name: "rotated.mp4"), policy: Self.strict)
        #expect(rotated.findings.filter { $0.severity == .error }.map(\.id) == ["rotated"])
        #expect(try await Self.ids(directory, "3b.mp4", ["-c:v", "libx264", "-bf", "3", "-g", "25"]) == ["b-frames"])
        #expect(try await Self.ids(directory, "open.mp4", x264 + ["-x264-params", "open-gop=1"]) == ["open-gop"])
        #expect(try await Self.ids(directory, "vfr.mp4", x264 + ["-vf", "setpts='if(lt(N,50),N,N*1.5)/25/TB'", "-fps_mode", "vfr"]) == ["variable-frame-rate"])
        let fast = CodecFactsTests.source.map { $0 == "testsrc2=size=320x240:rate=25" ? "testsrc2=size=320x240:rate=120" : $0 }
            + ["-f", "lavfi", "-i", "sine=sample_rate=48000", "-ac", "2", "-t", "4"]
        #expect(try await Self.ids(directory, "120.mp4", x264, source: fast) == ["frame-rate"])
        let surround = CodecFactsTests.source + ["-f", "lavfi", "-i", "sine=sample_rate=44100", "-ac", "4", "-t", "4"]
        #expect(try await Self.ids(directory, "quad44.mp4", x264, source: surround) == ["audio-channels", "audio-sample-rate"])
        var tight = Self.strict
        tight.maxVideoBitRate = 100_000
        tight.maxGOPBitRate = 100_000
        tight.maxFileSize = 10_000
        #expect(try await Self.ids(directory, "heavy.mp4", x264, policy: tight) == ["file-size", "gop-bit-rate", "video-bit-rate"])
        // YouTube's "no edit lists" judges ffmpeg's default (B-frames make it shift the video):
        var none = Self.strict
        none.editLists = "none"
        #expect(try await Self.ids(directory, "edits.mp4", x264, policy: none) == ["edit-list", "edit-list"], "the video and the AAC priming")
        #expect(try await Self.ids(directory, "no-edits.mp4", x264 + ["-use_editlist", "0"], policy: none) == [])
    }

    /// Codec levels as their specifications write them, and a cap by family.
    @Test(.enabled(if: !Executables.underSanitizer, "encodes films with ffmpeg: the plain run only (in one AddressSanitizer CI run with these encodes beside them, URLSession deadline tests overran)"))
    func levels() async throws {
        #expect(AVCConfigurationBox(profile: 100, compatibility: 0, level: 42).levelNumber == 4.2)
        #expect(AVCConfigurationBox(profile: 66, compatibility: 0, level: 9).levelNumber == 1.0)
        let hevc = { (idc: UInt8) in HEVCConfigurationBox(profileSpace: 0, tierFlag: false, profile: 1, compatibilityFlags: 0, constraintFlags: [], level: idc).levelNumber }
        #expect(hevc(153) == 5.1 && hevc(93) == 3.1 && hevc(120) == 4.0 && hevc(60) == 2.0)
        let av1 = { (idx: UInt8) in AV1CodecConfigurationBox(profile: 0, level: idx, tier: 0, bitDepth: 8, monochrome: false).levelNumber }
        #expect(av1(13) == 5.1 && av1(8) == 4.0 && av1(0) == 2.0 && av1(31) == nil)
        #expect(VPCodecConfigurationBox(profile: 0, level: 31, bitDepth: 8).levelNumber == 3.1)
        let directory = FileSystem.temporaryDirectory("mp4probe-level")
        defer { FileSystem.removeDirectory(directory) }
        var policy = Self.strict
        policy.maxLevel = ["avc": 4.2]
        #expect(try await Self.ids(directory, "51.mp4", ["-c:v", "libx264", "-bf", "2", "-g", "25", "-level", "5.1"], policy: policy) == ["level"])
        #expect(try await Self.ids(directory, "41.mp4", ["-c:v", "libx264", "-bf", "2", "-g", "25", "-level", "4.1"], policy: policy) == [])
        #expect(try CheckPolicy.parse(document: Array(#"{"maxLevel": {"avc": 4.2, "hevc": 5.1}}"#.utf8)).maxLevel == ["avc": 4.2, "hevc": 5.1])
        #expect(throws: CheckPolicy.DocumentError.self) { try CheckPolicy.parse(document: Array(#"{"maxLevel": {"h264": 4.2}}"#.utf8)) }
        let depths = try CheckPolicy.parse(document: Array(#"{"maxBitDepth": {"avc": 8, "hevc": 10}}"#.utf8))
        #expect(depths.maxBitDepthByFamily == ["avc": 8, "hevc": 10] && depths.maxBitDepth == nil)
        #expect(throws: CheckPolicy.DocumentError.self) { try CheckPolicy.parse(document: Array(#"{"maxBitDepth": {"avc": 8.5}}"#.utf8)) }
        // A policy file's number replaces a preset's caps by family, and the other way round.
        let over = try CheckPolicy.parse(document: Array(#"{"maxBitDepth": 12}"#.utf8), base: CheckPreset.mux.policy)
        #expect(over.maxBitDepth == 12 && over.maxBitDepthByFamily == nil)
        let back = try CheckPolicy.parse(document: Array(#"{"maxBitDepth": {"hevc": 12}}"#.utf8), base: over)
        #expect(back.maxBitDepth == nil && back.maxBitDepthByFamily == ["hevc": 12])
    }

    /// The keys read from a policy document, strictly.
    @Test func policyDocumentKeys() throws {
        let policy = try CheckPolicy.parse(document: Array(#"{"maxBitDepth": 8, "allowChroma": ["4:2:0"], "allowInterlaced": false, "maxFrameRate": 60, "requireConstantFrameRate": true, "maxConsecutiveBFrames": 2, "requireClosedGOP": true, "editLists": "none", "maxVideoBitRate": 8000000, "maxGOPBitRate": 16000000, "maxFileSize": 30000000000, "allowAudioChannels": [2, 6], "allowAudioSampleRates": [48000, 96000], "allowRotation": false}"#.utf8))
        #expect(!policy.allowRotation && policy.maxBitDepth == 8 && policy.allowChroma == ["4:2:0"] && !policy.allowInterlaced && policy.maxFrameRate == 60)
        #expect(policy.requireConstantFrameRate && policy.maxConsecutiveBFrames == 2 && policy.requireClosedGOP && policy.editLists == "none")
        #expect(policy.maxVideoBitRate == 8_000_000 && policy.maxGOPBitRate == 16_000_000 && policy.maxFileSize == 30_000_000_000)
        #expect(policy.allowAudioChannels == [2, 6] && policy.allowAudioSampleRates == [48000, 96000])
        #expect(throws: CheckPolicy.DocumentError.self) { try CheckPolicy.parse(document: Array(#"{"allowChroma": ["4:1:1"]}"#.utf8)) }
        #expect(throws: CheckPolicy.DocumentError.self) { try CheckPolicy.parse(document: Array(#"{"editLists": "some"}"#.utf8)) }
        #expect(throws: CheckPolicy.DocumentError.self) { try CheckPolicy.parse(document: Array(#"{"allowAudioChannels": [2.5]}"#.utf8)) }
    }

    /// Every preset parses (its literals are a policy document) and sets what it lists.
    @Test func presetsAreTheirRules() throws {
        for preset in CheckPreset.allCases {
            let document = "{" + preset.rules.map { "\"\($0.key)\": \($0.value)" }.joined(separator: ", ") + "}"
            #expect(throws: Never.self) { try CheckPolicy.parse(document: Array(document.utf8)) }
            #expect(preset.policy != CheckPolicy(), "\(preset.rawValue)")
        }
        #expect(CheckPreset.youtube.policy.editLists == "none" && CheckPreset.youtube.policy.maxConsecutiveBFrames == 2)
        #expect(CheckPreset.mux.policy.maxGOPBitRate == 16_000_000 && CheckPreset.mux.policy.maxBitDepthByFamily == ["avc": 8, "hevc": 10])
        #expect(CheckPreset.cloudflare.policy.maxFileSize == 30_000_000_000)
        #expect(CheckPreset.appleHLS.policy.maxFrameRate == 60 && CheckPreset.appleHLS.policy.fragmentedCodecs == ["hvc1", "hev1"])
    }

    /// A 1080p H.264/AAC film made to meet all four presets passes each; ffmpeg's defaults
    /// fail YouTube's (edit lists, three B-frames); HEVC in a progressive file fails Apple's,
    /// PQ without mastering metadata too; 10-bit fails Mux's; interlaced fails Cloudflare's.
    @Test(.enabled(if: !Executables.underSanitizer, "encodes films with ffmpeg: the plain run only (in one AddressSanitizer CI run with these encodes beside them, URLSession deadline tests overran)"))
    func theFourPresets() async throws {
        let directory = FileSystem.temporaryDirectory("mp4probe-presets")
        defer { FileSystem.removeDirectory(directory) }
        let hd = ["-f", "lavfi", "-i", "testsrc2=size=1920x1080:rate=30", "-t", "2", "-f", "lavfi", "-i", "sine=sample_rate=48000", "-ac", "2", "-t", "2"]
        let meets = ["-c:v", "libx264", "-preset", "ultrafast", "-bf", "2", "-g", "30", "-pix_fmt", "yuv420p", "-b:v", "4M", "-use_editlist", "0"]
        #expect(try await Self.ids(directory, "meets.mp4", meets, policy: CheckPreset.youtube.policy, source: hd) == [], "youtube")
        let film = try #require(FileSystem.read(directory + "/meets.mp4"))
        for preset in CheckPreset.allCases {
            let check = await FileCheck.check(MemorySource(film, name: "meets.mp4"), policy: preset.policy)
            #expect(check.findings.filter { $0.severity == .error }.isEmpty, "\(preset.rawValue): \(check.findings)")
        }
        #expect(try await Self.ids(directory, "default.mp4", ["-c:v", "libx264", "-bf", "3"], policy: CheckPreset.youtube.policy).sorted() == ["b-frames", "edit-list", "edit-list"])
        let hevc = ["-c:v", "libx265", "-x265-params", "log-level=error:no-open-gop=1", "-tag:v", "hvc1", "-use_editlist", "0"]
        #expect(try await Self.ids(directory, "hevc.mp4", hevc, policy: CheckPreset.appleHLS.policy) == ["not-fragmented"])
        let pq = hevc + ["-pix_fmt", "yuv420p10le", "-color_trc", "smpte2084", "-color_primaries", "bt2020", "-colorspace", "bt2020nc",
                         "-movflags", "+frag_keyframe+empty_moov+default_base_moof"]
        #expect(try await Self.ids(directory, "pq.mp4", pq, policy: CheckPreset.appleHLS.policy) == ["hdr-not-allowed"])
        #expect(try await Self.ids(directory, "10bit.mp4", meets + ["-pix_fmt", "yuv420p10le"], policy: CheckPreset.mux.policy) == ["bit-depth"])
        // Mux takes 10-bit 4:2:0 as standard input when it is HEVC.
        #expect(try await Self.ids(directory, "hevc10.mp4", hevc + ["-pix_fmt", "yuv420p10le", "-b:v", "2M"], policy: CheckPreset.mux.policy) == [])
        #expect(try await Self.ids(directory, "interlaced.mp4", meets + ["-flags", "+ildct+ilme", "-top", "1"], policy: CheckPreset.cloudflare.policy) == ["interlaced"])
    }
}
