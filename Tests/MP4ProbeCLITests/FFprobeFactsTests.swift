import Foundation
import Testing
@testable import MP4ProbeCLI
import MP4Core
import MP4TestSupport

/// What `mp4probe info --json` says about every SampleMedia file and every valid corpus file,
/// beside what ffprobe says (Tests/Goldens/ffprobe-facts.tsv, recorded by
/// Tests/Goldens/record-ffprobe-facts.sh): per track, matched by track ID, the codec tag, sample
/// count, width, height, sample rate and channel count; per file, the duration and every
/// format tag ffprobe shows (title, encoder, creation_time, location, QuickTime keys, brands...)
/// (issue 15).
///
/// Every difference is listed in Tests/Goldens/ffprobe-differences.tsv with its reason:
/// `ffprobe-wrong` ones count against the agreement, `not-comparable` ones (ffprobe measures
/// something else) are left out of it. A difference not listed fails, and so does a listed one
/// that no longer occurs, so the list stays the truth.
@Suite struct FFprobeFactsTests {
    struct Difference: Hashable, CustomStringConvertible {
        var file: String, field: String
        var description: String { "\(file)\t\(field)" }
    }

    static func rows(_ name: String) -> [[String]] {
        guard let bytes = FileSystem.read(Fixtures.packageRoot + "/Tests/Goldens/" + name) else { return [] }
        return String(decoding: bytes, as: UTF8.self).split(whereSeparator: \.isNewline).dropFirst().map { $0.split(separator: "\t", omittingEmptySubsequences: false).map(String.init) }
    }

    @Test(.enabled(if: Fixtures.hasCorpus, Fixtures.noCorpus), .hangGuard)
    func infoAgreesWithFFprobe() async throws {
        let facts = Self.rows("ffprobe-facts.tsv")
        let listed = Dictionary(Self.rows("ffprobe-differences.tsv").map { (Difference(file: $0[0], field: $0[1]), $0[2]) }, uniquingKeysWith: { a, _ in a })
        #expect(facts.count > 250, "the golden has \(facts.count) rows")
        var byFile: [String: [[String]]] = [:]
        for row in facts { byFile[row[0], default: []].append(row) }
        var compared = 0, agreed = 0
        var found: Set<Difference> = []
        var unexplained: [String] = []
        for (name, rows) in byFile.sorted(by: { $0.key < $1.key }) {
            let path = name.hasPrefix("SampleMedia/") ? Fixtures.packageRoot + "/" + name : Fixtures.packageRoot + "/../shared/" + name
            let result = await CommandTests.run(["info", "--json", path])
            let json = try CommandTests.json(result.out)
            var tracks: [Int: [String: Any]] = [:]
            for track in json["tracks"] as? [[String: Any]] ?? [] { if let id = track["trackId"] as? Int { tracks[id] = track } }
            func compare(_ field: String, _ agrees: Bool, _ detail: @autoclosure () -> String) {
                let difference = Difference(file: name, field: field)
                if listed[difference] == "not-comparable" {
                    if !agrees { found.insert(difference) }
                    return
                }
                compared += 1
                if agrees { agreed += 1; return }
                found.insert(difference)
                if listed[difference] == nil { unexplained.append("\(name) \(field): \(detail())") }
            }
            for row in rows {
                if row[1] == "format" {
                    if let theirs = Double(row[9]) {
                        let ours = json["durationSeconds"] as? Double
                        compare("duration", ours.map { abs($0 - theirs) <= max(0.0015, 0.002 * theirs) } ?? false, "mp4probe \(ours.map { "\($0)" } ?? "null"), ffprobe \(theirs)")
                    }
                    // Format tags: ours by the same names; the brands from ftyp unless a tag
                    // of that name overrides them (ffmpeg-written QuickTime keys do).
                    let tags = json["tags"] as? [String: Any] ?? [:]
                    let brands = json["brands"] as? [String: Any] ?? [:]
                    let theirTags = row.count > 10 ? (try? JSONSerialization.jsonObject(with: Data(row[10].utf8))) as? [String: String] ?? [:] : [:]
                    for (key, theirs) in theirTags.sorted(by: { $0.key < $1.key }) {
                        var ours = tags[key] as? String
                        if ours == nil {
                            switch key {
                            case "major_brand": ours = brands["major"] as? String
                            case "minor_version": ours = (brands["minorVersion"] as? Int).map { String($0) }
                            case "compatible_brands": ours = (brands["compatible"] as? [String])?.joined()
                            default: break
                            }
                        }
                        compare("tag " + key, ours == theirs, "mp4probe \(ours ?? "null"), ffprobe \(theirs)")
                    }
                    continue
                }
                guard let id = Int(row[2]), let track = tracks[id] else {
                    compare("track \(row[2])", false, "no such track")
                    continue
                }
                func int(_ key: String) -> Int? { track[key] as? Int }
                if row[3] != "-" { compare("codec", track["codec"] as? String == row[3], "mp4probe \(track["codec"] ?? "null"), ffprobe \(row[3])") }
                if let frames = Int(row[4]) { compare("sampleCount", int("sampleCount") == frames, "mp4probe \(int("sampleCount") ?? -1), ffprobe \(frames)") }
                if let width = Int(row[5]) { compare("width", int("width") == width, "mp4probe \(int("width") ?? -1), ffprobe \(width)") }
                if let height = Int(row[6]) { compare("height", int("height") == height, "mp4probe \(int("height") ?? -1), ffprobe \(height)") }
                if let rate = Double(row[7]) {
                    let ours = track["sampleRate"] as? Double
                    compare("sampleRate", ours.map { $0.rounded() == rate } ?? false, "mp4probe \(ours.map { "\($0)" } ?? "null"), ffprobe \(rate)")
                }
                if let channels = Int(row[8]) { compare("channels", int("channelCount") == channels, "mp4probe \(int("channelCount") ?? -1), ffprobe \(channels)") }
            }
        }
        let percent = Double(agreed) / Double(max(compared, 1)) * 100
        print("mp4probe info agrees with ffprobe on \(agreed) of \(compared) comparable fields (\(String(format: "%.2f", percent)) %) over \(byFile.count) files; \(listed.count) listed differences")
        #expect(unexplained.isEmpty, "differences not in ffprobe-differences.tsv:\n\(unexplained.joined(separator: "\n"))")
        let stale = Set(listed.keys).subtracting(found)
        #expect(stale.isEmpty, "listed differences that no longer occur: \(stale.sorted { $0.description < $1.description })")
        #expect(percent >= 99.5, "agreement \(percent) % is below 99.5 %")
    }

    /// The picture and frame facts of issue 45 beside ffprobe's (Tests/Goldens/ffprobe-codec-facts.tsv,
    /// recorded by Tests/Goldens/record-ffprobe-codec-facts.sh): bit depth and chroma against
    /// `pix_fmt`, interlaced against `field_order`, frames per second against `avg_frame_rate`
    /// (0.5 %), the transfer function against `color_transfer`, for every video track where both
    /// say. Differences are listed with their reason in ffprobe-codec-differences.tsv, as above.
    @Test(.enabled(if: Fixtures.hasCorpus, Fixtures.noCorpus), .hangGuard)
    func codecFactsAgreeWithFFprobe() async throws {
        let facts = Self.rows("ffprobe-codec-facts.tsv")
        let listed = Dictionary(Self.rows("ffprobe-codec-differences.tsv").map { (Difference(file: $0[0], field: $0[1]), $0[2]) }, uniquingKeysWith: { a, _ in a })
        #expect(facts.count > 60, "the golden has \(facts.count) rows")
        var compared = 0, agreed = 0
        var found: Set<Difference> = []
        var unexplained: [String] = []
        var byFile: [String: [[String]]] = [:]
        for row in facts { byFile[row[0], default: []].append(row) }
        for (name, rows) in byFile.sorted(by: { $0.key < $1.key }) {
            let path = name.hasPrefix("SampleMedia/") ? Fixtures.packageRoot + "/" + name : Fixtures.packageRoot + "/../shared/" + name
            let json = try CommandTests.json(await CommandTests.run(["info", "--json", path]).out)
            var tracks: [Int: [String: Any]] = [:]
            for track in json["tracks"] as? [[String: Any]] ?? [] { if let id = track["trackId"] as? Int { tracks[id] = track } }
            func compare(_ field: String, _ agrees: Bool, _ detail: @autoclosure () -> String) {
                let difference = Difference(file: name, field: field)
                if listed[difference] == "not-comparable" {
                    if !agrees { found.insert(difference) }
                    return
                }
                compared += 1
                if agrees { agreed += 1; return }
                found.insert(difference)
                if listed[difference] == nil { unexplained.append("\(name) \(field): \(detail())") }
            }
            for row in rows {
                guard let id = Int(row[1]), let track = tracks[id] else { continue }
                let picture = track["pictureFormat"] as? [String: Any]
                if let (depth, chroma) = Self.pixelFormat(row[2]), let picture {
                    let ours = "\(picture["bitDepth"] as? Int ?? 0) \(picture["chroma"] as? String ?? "")"
                    compare("pictureFormat", ours == "\(depth) \(chroma)", "mp4probe \(ours), ffprobe \(row[2])")
                }
                if row[3] != "-", let interlaced = picture?["interlaced"] as? Bool {
                    compare("interlaced", interlaced == (row[3] != "progressive"), "mp4probe interlaced \(interlaced), ffprobe \(row[3])")
                }
                let rate = row[4].split(separator: "/").compactMap { Double($0) }
                if rate.count == 2, rate[1] > 0, rate[0] > 0, let frames = track["frames"] as? [String: Any], let ours = frames["framesPerSecond"] as? Double {
                    let theirs = rate[0] / rate[1]
                    compare("framesPerSecond", abs(ours - theirs) <= 0.005 * theirs, "mp4probe \(ours), ffprobe \(theirs)")
                }
                if row[5] != "-", let ours = track["transfer"] as? String {
                    compare("transfer", ours == row[5], "mp4probe \(ours), ffprobe \(row[5])")
                }
            }
        }
        let percent = Double(agreed) / Double(max(compared, 1)) * 100
        print("mp4probe's picture and frame facts agree with ffprobe on \(agreed) of \(compared) comparable fields (\(String(format: "%.2f", percent)) %) over \(byFile.count) files; \(listed.count) listed differences")
        #expect(compared > 100, "only \(compared) fields compared")
        #expect(unexplained.isEmpty, "differences not in ffprobe-codec-differences.tsv:\n\(unexplained.joined(separator: "\n"))")
        let stale = Set(listed.keys).subtracting(found)
        #expect(stale.isEmpty, "listed differences that no longer occur: \(stale.sorted { $0.description < $1.description })")
        #expect(percent >= 99.5, "agreement \(percent) % is below 99.5 %")
    }

    /// Bit depth and chroma of an ffmpeg pixel format (`yuv420p10le`: 10, 4:2:0); nil for
    /// RGB and packed formats, which a YUV codec configuration does not name.
    static func pixelFormat(_ name: String) -> (Int, String)? {
        let chroma: String
        if name.hasPrefix("gray") { chroma = "4:0:0" }
        else if name.hasPrefix("yuv420") || name.hasPrefix("yuvj420") { chroma = "4:2:0" }
        else if name.hasPrefix("yuv422") || name.hasPrefix("yuvj422") { chroma = "4:2:2" }
        else if name.hasPrefix("yuv444") || name.hasPrefix("yuvj444") { chroma = "4:4:4" }
        else { return nil }
        for depth in [9, 10, 12, 14, 16] where name.contains("p\(depth)") || name.hasPrefix("gray\(depth)") { return (depth, chroma) }
        return (8, chroma)
    }
}
