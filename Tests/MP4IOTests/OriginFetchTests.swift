import Foundation
import Testing
@testable import MP4Core
@testable import MP4IO
import MP4TestSupport

/// The executor of one fetch (``OriginFetch``): what it writes, and when it commits.
@Suite struct OriginFetchTests {
    /// Bytes in pieces of 64 KiB, as a socket delivers them.
    struct PiecedSource: ByteSource {
        let bytes: [UInt8]
        var name: String { "<pieced>" }
        func length() async throws -> UInt64 { UInt64(bytes.count) }
        func read(_ range: Range<UInt64>) async throws -> [UInt8] { Array(bytes[Int(range.lowerBound)..<Int(min(range.upperBound, UInt64(bytes.count)))]) }
        func read(_ range: Range<UInt64>, into consume: (ArraySlice<UInt8>) async throws -> Void) async throws {
            var position = Int(range.lowerBound)
            let end = Int(min(range.upperBound, UInt64(bytes.count)))
            while position < end {
                let next = min(position + (64 << 10), end)
                try await consume(bytes[position..<next])
                position = next
            }
        }
    }

    /// A commit that waits until the test lets it end.
    final class HeldCommits: Sendable {
        private struct State {
            var held = true
            var waiting: [CheckedContinuation<Void, Never>] = []
            var ranges: [Range<UInt64>] = []
            var running = 0
            var mostRunning = 0
        }
        private let state = Locked(State())
        var ranges: [Range<UInt64>] { state.withLock { $0.ranges } }
        var mostRunning: Int { state.withLock { $0.mostRunning } }

        func commit(_ range: Range<UInt64>) async -> Bool {
            state.withLock { state in
                state.ranges.append(range)
                state.running += 1
                state.mostRunning = max(state.mostRunning, state.running)
            }
            await withCheckedContinuation { continuation in
                let now = state.withLock { state -> Bool in
                    if state.held { state.waiting.append(continuation); return false }
                    return true
                }
                if now { continuation.resume() }
            }
            state.withLock { $0.running -= 1 }
            return true
        }

        func release() {
            let waiting = state.withLock { state in
                state.held = false
                defer { state.waiting = [] }
                return state.waiting
            }
            for continuation in waiting { continuation.resume() }
        }
    }

    /// A commit's flush (10 ms on this machine's disk, 64 of them in a 1 GiB fill) does not
    /// stop the transfer: the fetch writes the next interval while the one before commits,
    /// one commit at a time, and every byte is claimed in order at the end. Fails with the
    /// fetch waiting at each commit (it stops at the first interval's end).
    @Test func theFetchWritesOnWhileACommitRuns() async throws {
        let directory = FileSystem.temporaryDirectory("mp4probe-origin-fetch")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/data"
        let fd = try Platform.openForUpdate(path)
        defer { _ = close(fd) }
        let bytes = (0..<(1 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31 >> 3) }
        let interval: UInt64 = 128 << 10
        let progress = FetchProgress(0..<UInt64(bytes.count), fd: fd)
        let commits = HeldCommits()
        let fetch = Task {
            try await OriginFetch.run(0..<UInt64(bytes.count), from: PiecedSource(bytes: bytes), into: progress, dataPath: path, name: "test",
                                      commitInterval: interval) { range, _ in await commits.commit(range) }
        }
        // The first commit is held: the fetch writes the second interval meanwhile, and waits
        // at its end for the first commit to end before it starts the second.
        let deadline = ContinuousClock.now + .seconds(10)
        while progress.written < 2 * interval && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(5)) }
        #expect(progress.written == 2 * interval)
        try await Task.sleep(for: .milliseconds(100))
        #expect(progress.written == 2 * interval, "one commit runs behind the writes, not more")
        #expect(commits.ranges == [0..<interval])
        #expect(progress.committed == 0, "bytes are claimed only by a commit that ended")
        commits.release()
        #expect(try await fetch.value)
        let expected = stride(from: UInt64(0), to: UInt64(bytes.count), by: Int(interval)).map { $0..<($0 + interval) }
        #expect(commits.ranges == expected)
        #expect(commits.mostRunning == 1)
        #expect(progress.committed == UInt64(bytes.count))
        #expect(try Platform.readFully(fd, offset: 0, count: bytes.count, path: path) == bytes)
    }
}
