import Foundation
import Testing
@testable import MP4IO
import MP4TestSupport

/// The cache's lock protocol is correct on Darwin too (issue 31): what two `mp4probe fetch`
/// processes filling one entry did, traced with strace, replayed under Darwin's lock rules
/// (`LockTrace`). The old protocol (a record lock for a fetch, then `flock` for a commit, on one
/// file) ran here and would have hung there on the first commit.
@Suite struct EntryLocksTests {
    /// The rules themselves: the old protocol's sequence is a conflict (the process would wait
    /// for itself), the new one's is not, and a classic POSIX lock is named.
    @Test func darwinRulesFindTheMixedProtocol() {
        let path = "/c/e.lock"
        let old = """
        1 1.0 openat(AT_FDCWD</c>, "/c/e.lock", O_RDWR|O_CREAT|O_CLOEXEC, 0644) = 5<\(path)>
        1 1.1 fcntl(5<\(path)>, F_OFD_SETLK, {l_type=F_WRLCK, l_whence=SEEK_SET, l_start=1, l_len=1048576}) = 0
        1 1.2 flock(5<\(path)>, LOCK_EX) = 0
        1 1.3 flock(5<\(path)>, LOCK_UN) = 0
        1 1.4 close(5<\(path)>) = 0
        """
        var mixed = LockTrace()
        mixed.add(strace: old, process: "A")
        let verdict = mixed.replayUnderDarwinRules()
        #expect(verdict.conflicts.count == 1 && verdict.conflicts.first?.contains("wait for itself") == true, "\(verdict.conflicts)")

        let new = """
        1 1.0 openat(AT_FDCWD</c>, "/c/e.lock", O_RDWR|O_CREAT|O_CLOEXEC, 0644) = 5<\(path)>
        1 1.1 fcntl(5<\(path)>, F_OFD_SETLK, {l_type=F_WRLCK, l_whence=SEEK_SET, l_start=1, l_len=1048576}) = 0
        2 1.2 fcntl(5<\(path)>, F_OFD_SETLKW, {l_type=F_WRLCK, l_whence=SEEK_SET, l_start=0, l_len=1} <unfinished ...>
        1 1.25 close(7</c/other>) = 0
        2 1.3 <... fcntl resumed>) = 0
        1 1.4 fcntl(5<\(path)>, F_OFD_SETLK, {l_type=F_UNLCK, l_whence=SEEK_SET, l_start=0, l_len=1}) = 0
        1 1.5 fcntl(5<\(path)>, F_SETLK, {l_type=F_WRLCK, l_whence=SEEK_SET, l_start=9, l_len=1}) = -1 EAGAIN (Resource temporarily unavailable)
        1 1.6 close(5<\(path)>) = 0
        """
        var recordsOnly = LockTrace()
        recordsOnly.add(strace: new, process: "A")
        let clean = recordsOnly.replayUnderDarwinRules()
        #expect(clean.conflicts.isEmpty, "\(clean.conflicts)")
        #expect(clean.commitsWhileFetching == 1)
        #expect(clean.classicLocks.count == 1 && clean.refusedClaims == 1)
    }

    /// Two `mp4probe fetch --all` processes fill one entry from a paced origin, committing
    /// every 256 KiB while their fetches hold range locks; strace records every lock call and
    /// the replay under Darwin's rules finds no conflict, no classic lock, and (so that the test
    /// proves something) commits made while a range was held.
    @Test(.requires("nginx", "strace"), .enabled(if: Executables.mp4probe != nil, "the mp4probe executable is not built beside the tests"))
    func twoProcessesFillingOneEntryNeverMixLockKinds() async throws {
        let mp4probe = try #require(Executables.mp4probe), strace = try #require(Executables.find("strace"))
        let root = FileSystem.temporaryDirectory("mp4probe-locks-origin")
        defer { FileSystem.removeDirectory(root) }
        var random = SeededRandom(seed: 31)
        let bytes = random.bytes(3 << 20)
        FileSystem.write(bytes, to: root + "/v.mp4")
        let nginx = try #require(NginxServer.start(root: root, limitRate: "2m"))
        defer { nginx.stop() }
        let cache = FileSystem.temporaryDirectory("mp4probe-locks")
        defer { FileSystem.removeDirectory(cache) }
        let url = nginx.baseURL + "/v.mp4"
        let traceDirectory = FileSystem.temporaryDirectory("mp4probe-locks-traces")
        defer { FileSystem.removeDirectory(traceDirectory) }
        let traces = ["A", "B"].map { traceDirectory + "/\($0).trace" }
        let outputs = await withTaskGroup(of: String.self) { group in
            for (index, trace) in traces.enumerated() {
                group.addTask {
                    // The second starts a moment later, into the first's fetch.
                    if index == 1 { try? await Task.sleep(nanoseconds: 300_000_000) }
                    return await Executables.runOffPool(strace, ["-f", "-ttt", "-y", "-qq", "-e", "trace=openat,open,close,fcntl,flock", "-o", trace,
                                                                 mp4probe, "fetch", url, "--cache", cache, "--all", "--block", "256K"], stderrToStdout: true)
                }
            }
            var all: [String] = []
            for await output in group { all.append(output) }
            return all
        }
        var trace = LockTrace()
        for (index, path) in traces.enumerated() {
            let text = String(decoding: try #require(FileSystem.read(path), "strace wrote no trace: \(outputs)"), as: UTF8.self)
            trace.add(strace: text, process: ["A", "B"][index])
        }
        let verdict = trace.replayUnderDarwinRules()
        print("lock calls of two fetch processes: \(verdict.lockCalls); commits while a range was held: \(verdict.commitsWhileFetching); claims refused (the other process had them): \(verdict.refusedClaims)")
        #expect(verdict.lockCalls > 10 && verdict.commitsWhileFetching >= 2, "the trace does not show commits during a fetch: the replay would prove nothing (\(outputs))")
        #expect(verdict.conflicts.isEmpty, "under Darwin's rules: \(verdict.conflicts.prefix(5))")
        #expect(verdict.classicLocks.isEmpty, "classic POSIX record locks (released by any close of the file): \(verdict.classicLocks.prefix(5))")
        let entry = try #require(CacheDirectory.entries(cache).first)
        #expect(entry.isComplete && entry.length == UInt64(bytes.count))
    }
}
