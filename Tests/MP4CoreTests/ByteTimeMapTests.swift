import Testing
@testable import MP4Core
import MP4TestSupport

/// `ByteTimeMap` turns an offset a player asks for back into the keyframe it is seeking to.
@Suite struct ByteTimeMapTests {
    @Test(arguments: ["faststart.mp4", "moov-at-end.mp4", "hevc.mp4", "quicktime.mov"])
    func offsetsMapToTheNextKeyframe(name: String) async throws {
        let file = try await MP4File.open(MemorySource(try #require(FileSystem.read(Fixtures.sample(name)))))
        let planner = SeekPlanner(file: file)
        let main = try #require(planner.mainTrack)
        let map = ByteTimeMap(planner)
        let keyframes = (main.samples.syncSampleIndices ?? Array(0..<main.samples.sampleCount)).compactMap { index in
            main.samples.sample(at: index).map { (offset: $0.byteOffset, time: main.presentationTime(of: index)) }
        }.sorted { $0.offset < $1.offset }
        #expect(keyframes.count >= 1)
        if main.samples.syncSampleIndices != nil {
            for (k, keyframe) in keyframes.enumerated() {
                // At a keyframe: that keyframe; just after it: the next one (the last at the end).
                #expect(map.time(at: keyframe.offset) == keyframe.time, "\(name) keyframe \(k)")
                #expect(map.time(at: keyframe.offset + 1) == keyframes[min(k + 1, keyframes.count - 1)].time, "\(name) after keyframe \(k)")
            }
        }
        // Before every sample: the first keyframe, so the start of the movie.
        #expect(map.time(at: 0) == keyframes[0].time)
        // And every plan at a mapped time starts at or before the offset's keyframe.
        let offset = keyframes[keyframes.count / 2].offset
        let plan = try planner.plan(at: try #require(map.time(at: offset)), duration: 1)
        #expect(plan.tracks.contains { $0.trackID == main.track.trackID && $0.startOffset == offset })
    }
}
