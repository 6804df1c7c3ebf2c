import Foundation
import Testing
import MP4Core
@testable import MP4IO
import MP4TestSupport

/// A preload of a fragmented file walks its fragments from the first instead of scanning the
/// file (``Preload/walkFragments``): for every file of SampleMedia and the shared corpus, a
/// 2 s preload ends without a trap or a hang, and for every fragmented file the walk takes,
/// it caches at least the bytes the seek plan of the whole file says [0, 2.25 s) needs.
/// For a valid file, the cache's status then says at least 2 s play (or the film's window,
/// when shorter).
@Suite(.hangGuard) struct PreloadWalkTests {
    static var files: [String] {
        let directories = [Fixtures.sampleMedia, Fixtures.sampleMedia + "/malformed"]
            + (Fixtures.sharedCorpus.map { [$0 + "/valid", $0 + "/malformed"] } ?? [])
        return directories.flatMap { directory in FileSystem.list(directory).sorted().map { directory + "/" + $0 } }
    }

    @Test func theWalkCachesWhatTheSeekPlanNeeds() async throws {
        var walked = 0
        for path in Self.files {
            // Off the shared pool, as a loader's preloads run: this test's many cache opens
            // otherwise queue jobs of process-wide actors (CacheRegistry) on a pool that
            // ServingTaskTests holds, and the proxy it runs meanwhile waited 10 s for them.
            if await ServingTask.start({ await Self.check(path) }).value { walked += 1 }
        }
        #expect(walked >= 2, "fragmented files walked: \(walked)")
        print("fragment walks checked: \(walked)")
    }

    /// Preloads `path` and checks it; whether the walk took it.
    static func check(_ path: String) async -> Bool {
        let directory = FileSystem.temporaryDirectory("mp4probe-walk")
        defer { FileSystem.removeDirectory(directory) }
        guard let local = try? FileSource(path: path),
              let cached = try? await CachedByteSource(upstream: local, directory: directory) else { return false }
        var options = MP4File.Options()
        options.stopsAtFirstFragment = true
        let walks = (try? await MP4File.open(local, options: options)).flatMap(Preload.walkStart) != nil
        guard (try? await Preload.run(cached, seconds: 2)) != nil, walks else { return false }
        let status = await CacheStatus.of(cached.name, in: directory)
        guard let file = try? await MP4File.open(local),
              let plan = try? await SeekPlanner.plan(file, from: local, at: 0, duration: 2 + Preload.reorderMargin) else { return true }
        let present = await cached.cachedRanges
        // What the cache's status says plays: the 2 s asked, or the whole plan's window
        // when the film is shorter (for valid files: a malformed one's times may be absurd).
        let playable = status?.playable.prefixSeconds ?? 0
        #expect(path.contains("/malformed/") || playable + 0.05 >= min(2, plan.windowEnd), "\(path): status says \(playable) s after a 2 s preload (window \(plan.windowEnd) s)")
        // A truncated file's plan may name bytes past its end; those are nobody's to cache.
        for planned in plan.ranges where planned.lowerBound < file.layout.fileSize {
            let range = planned.lowerBound..<min(planned.upperBound, file.layout.fileSize)
            #expect(present.contains(range), "\(path): \(range) of the plan is not cached after the walk")
        }
        return true
    }
}
