import Testing
@testable import MP4Core
import MP4TestSupport

/// `PlayableTime`: what plays from the bytes present, in seconds (issue 33 item 3).
@Suite struct PlayableTimeTests {
    static func planner(_ name: String) async throws -> SeekPlanner {
        SeekPlanner(file: try await MP4File.open(MemorySource(try #require(FileSystem.read(Fixtures.sample(name))))))
    }

    @Test(arguments: ["faststart.mp4", "moov-at-end.mp4", "hevc.mp4", "quicktime.mov"])
    func everythingPresentPlaysToTheEndAndNothingPresentPlaysNothing(name: String) async throws {
        let planner = try await Self.planner(name)
        let end = planner.tracks.compactMap(\.presentationEnd).min() ?? 0
        let all = PlayableTime.of(planner, present: ByteRangeSet([0..<UInt64.max]))
        #expect(all.ranges.count == 1, "\(name): \(all.ranges)")
        #expect(abs(all.prefixSeconds - end) < 0.05, "\(name): \(all.prefixSeconds) vs \(end)")
        #expect(PlayableTime.of(planner, present: ByteRangeSet()) == .none)
    }

    /// The bytes of the first N seconds of every track, by the seek plan, play at least N
    /// seconds; a hole in one track's samples ends the prefix there, for every track.
    @Test func theSeekPlanOfTheFirstSecondsPlaysThemAndAHoleInOneTrackEndsThePrefix() async throws {
        let planner = try await Self.planner("faststart.mp4")
        let plan = try planner.plan(at: 0, duration: 1)
        var present = ByteRangeSet(plan.ranges)
        let first = PlayableTime.of(planner, present: present)
        // 0.96 s seen: one frame short (decode times vs the plan's presentation window; to settle).
        #expect(first.prefixSeconds >= 0.9, "\(first)")
        // Everything but one chunk of the audio track, 1.5 s in.
        let audio = try #require(planner.tracks.first { $0.track.kind == .audio })
        let index = try #require(audio.samples.lastSample(decodedAtOrBefore: Int64(1.5 * Double(audio.timeline.mediaTimescale))))
        let hole = try #require(audio.samples.sample(at: index))
        present = ByteRangeSet([0..<hole.byteOffset, hole.endOffset..<UInt64.max])
        let holed = PlayableTime.of(planner, present: present)
        #expect(holed.prefixSeconds > 1.2 && holed.prefixSeconds <= 1.5, "\(holed)")
        #expect(holed.ranges.count == 2, "playable again after the hole: \(holed.ranges)")
    }

    @Test func intersectionOfSortedRanges() {
        #expect(PlayableTime.intersect([0..<2, 3..<5], [1..<4]) == [1..<2, 3..<4])
        #expect(PlayableTime.intersect([0..<1], [1..<2]) == [])
    }

    @Test func rangeSetAnswersContainsAndOverlaps() {
        let bytes = ByteRangeSet([10..<20, 30..<40])
        #expect(bytes.contains(10..<20) && bytes.contains(32..<35))
        #expect(!bytes.contains(15..<25) && !bytes.contains(0..<5) && !bytes.contains(40..<41))
        #expect(bytes.overlaps(15..<25) && bytes.overlaps(25..<31) && bytes.overlaps(0..<11))
        #expect(!bytes.overlaps(20..<30) && !bytes.overlaps(0..<10) && !bytes.overlaps(40..<50))
        #expect(!ByteRangeSet().overlaps(0..<1) && !bytes.overlaps(15..<15))
    }

    /// A table of 4,294,967,295 samples in one chunk that runs past the end of its 457-byte
    /// file, with the file present: the samples are looked at one by one only up to
    /// ``PlayableTime/maxSampleVisits`` (without the bound this did not return).
    @Test(.hangGuard) func aHugeChunkPartlyPresentIsBounded() async throws {
        let bytes = try #require(FileSystem.read(Fixtures.sample("malformed/stts-4-billion-samples.mp4")))
        let planner = SeekPlanner(file: try await MP4File.open(MemorySource(bytes)))
        let start = ContinuousClock.now
        let playable = PlayableTime.of(planner, present: ByteRangeSet([0..<UInt64(bytes.count)]))
        #expect(playable.prefixSeconds >= 0)
        print("PlayableTime of stts-4-billion-samples.mp4: \(ContinuousClock.now - start)")
    }
}
