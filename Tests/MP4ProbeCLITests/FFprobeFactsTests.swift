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

    @Test(.enabled(if: Fixtures.hasCorpus, Fixtures.noCorpus), .timeLimit(.minutes(5)))
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
}
