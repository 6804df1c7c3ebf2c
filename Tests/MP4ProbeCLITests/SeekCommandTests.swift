import Foundation
import Testing
import MP4ProbeCLI
import MP4TestSupport

@Suite struct SeekCommandTests {
    @Test func seekJSONNamesItsFieldsPlainly() async throws {
        let result = await CommandTests.run(["seek", Fixtures.sample("moov-at-end.mp4"), "00:00:01.300", "--duration", "0.5", "--json"])
        #expect(result.code == 0, "\(result.err)")
        let doc = try CommandTests.json(result.out)
        #expect(doc["keyframeTime"] as? Double == 1.0)
        // The AAC frame playing at the keyframe time and the one before it (MDCT overlap),
        // which start before the keyframe's bytes: a sparse copy holding only the plan's
        // ranges decodes frame-identical (SeekPlanDecodeTests).
        #expect(doc["startOffset"] as? Int == 35231)
        let reasons = (doc["tracks"] as? [[String: Any]])?.compactMap { $0["startReason"] as? String }
        #expect(reasons == ["keyframe", "decode-alignment"])
        let ranges = try #require(doc["ranges"] as? [[Int]])
        #expect(ranges.allSatisfy { $0.count == 2 && $0[0] < $0[1] })
        #expect(ranges.first?.first == doc["startOffset"] as? Int && ranges.last?.last == doc["endOffset"] as? Int)
        let tracks = try #require(doc["tracks"] as? [[String: Any]])
        #expect(tracks.count == 2 && tracks.allSatisfy { $0["firstSampleIndex"] != nil && $0["lastSampleIndex"] != nil })
    }

    @Test func seekErrorsAndTimes() async {
        #expect(await CommandTests.run(["seek", Fixtures.sample("faststart.mp4")]).code == 2)
        #expect(await CommandTests.run(["seek", Fixtures.sample("faststart.mp4"), "1:2:3:4"]).code == 2)
        #expect(await CommandTests.run(["seek", Fixtures.sample("faststart.mp4"), "abc"]).code == 2)
        #expect(await CommandTests.run(["seek", Fixtures.sample("faststart.mp4"), "1", "--align", "sideways"]).code == 2)
        let past = await CommandTests.run(["seek", Fixtures.sample("faststart.mp4"), "10"])
        // A time past the end is the caller's mistake, not the file's: exit 2, naming the end.
        #expect(past.code == 2 && past.err.contains("past the end of the movie (2.0"), "\(past.err)")
        // Fragmented: planned from mfra (fragmented.mp4) or sidx, with the same answer as ffprobe's packets.
        let fragmented = await CommandTests.run(["seek", Fixtures.sample("fragmented.mp4"), "1.5"])
        #expect(fragmented.code == 0 && fragmented.out.contains("keyframe:  track 1 sample 25 at 00:00:01.080"), "\(fragmented)")
        let short = try? CommandTests.json(await CommandTests.run(["seek", "--json", Fixtures.sample("fragmented-short.mp4"), "1.5"]).out)
        #expect(short?["sampleIndicesCountFromFileStart"] as? Bool == false && short?["keyframeTime"] as? Double == 1.08)
        #expect(await CommandTests.run(["seek", Fixtures.sample("fragmented-sidx.mp4"), "3"]).code == 2)
        #expect(await CommandTests.run(["seek", Fixtures.sample("faststart.mp4"), "0:01.5", "--align", "exact"]).out.contains("keyframe:  track 1 sample 34 at 00:00:01.480"))
    }

    @Test func samplesListsWhatFFprobeLists() async throws {
        let text = await CommandTests.run(["samples", Fixtures.sample("faststart.mp4"), "--track", "1", "--limit", "3"])
        #expect(text.code == 0)
        #expect(text.out.contains("0\t0\t1024\t512\t2966\t3801\tK\t0\t0.000000"))
        #expect(!text.out.contains("# track 2"))
        let json = try CommandTests.json(await CommandTests.run(["samples", "--json", Fixtures.sample("audio-edit-list.m4a")]).out)
        let track = try #require((json["tracks"] as? [[String: Any]])?.first)
        #expect(track["ffprobeShift"] as? Int == -1024)
        let samples = try #require(track["samples"] as? [[String: Any]])
        #expect(samples.count == 95)
        #expect(Set(samples[0].keys) == ["index", "dts", "pts", "duration", "offset", "size", "sync", "chunk", "presentationTime"])
        #expect(await CommandTests.run(["samples", Fixtures.sample("faststart.mp4"), "--track", "9"]).code == 2)
    }
}
