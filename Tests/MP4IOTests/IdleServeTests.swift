import Foundation
import Testing
@testable import MP4IO
import MP4TestSupport

/// An idle `serve` costs a phone nothing: no timer wakes it (the accept loop sleeps until a
/// connection, a stop or a check; the eviction pass runs only after writes). Counted as the
/// kernel counts them: each thread's voluntary and involuntary context switches in 10 s
/// (`/proc/PID/task/TID/status`). Before: 52 (a 250 ms accept timeout, and a 10 s eviction
/// sleep that libdispatch on Linux wakes for every second).
@Suite(.serialized, .hangGuard) struct IdleServeTests {
    /// Context switches of each thread of process `pid` so far.
    static func switches(_ pid: Int32) -> [String: Int] {
        let tasks = "/proc/\(pid)/task"
        var counts: [String: Int] = [:]
        for tid in (try? FileManager.default.contentsOfDirectory(atPath: tasks)) ?? [] {
            // (Read to its end: a /proc file says it is empty.)
            guard let status = try? String(contentsOfFile: "\(tasks)/\(tid)/status", encoding: .utf8) else { continue }
            counts[tid] = status.split(separator: "\n")
                .filter { $0.hasPrefix("voluntary_ctxt_switches") || $0.hasPrefix("nonvoluntary_ctxt_switches") }
                .compactMap { Int($0.split(separator: ":").last?.trimmingCharacters(in: .whitespaces) ?? "") }
                .reduce(0, +)
        }
        return counts
    }

    @Test(.enabled(if: Executables.mp4probe != nil && FileManager.default.fileExists(atPath: "/proc/self/task"), "needs the mp4probe executable beside the tests and /proc"))
    func anIdleServerIsNotWoken() async throws {
        let executable = try #require(Executables.mp4probe)
        let cache = FileSystem.temporaryDirectory("mp4probe-idle")
        defer { FileSystem.removeDirectory(cache) }
        // The defaults: a size limit (so an eviction loop), prefetch on.
        let (process, _) = try await ProxyProcessTests.serve(executable, cache: cache, arguments: [])
        defer { process.terminate() }
        try await Task.sleep(for: .seconds(2))   // past start-up
        let before = Self.switches(process.processIdentifier)
        try await Task.sleep(for: .seconds(10))
        let after = Self.switches(process.processIdentifier)
        #expect(!before.isEmpty && !after.isEmpty, "no threads read for \(process.processIdentifier)")
        // Threads that ended meanwhile (idle workers) are left out; new ones count whole.
        let wakeups = after.reduce(0) { $0 + max(0, $1.value - (before[$1.key] ?? 0)) }
        print("idle serve: \(wakeups) wake-ups in 10 s (context switches, \(after.count) threads)")
        #expect(wakeups <= 5, "an idle serve woke \(wakeups) times in 10 s")
    }
}
