import Foundation
import Testing
@testable import MP4IO
import MP4TestSupport
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The library's temporary files: written and renamed without touching process-wide state, and
/// removed by other means when their writer is gone.
@Suite struct AtomicFileWriterTests {
    /// A library installs no signal handlers: an app's SIGINT, SIGTERM and SIGHUP handlers are
    /// its own (the first atomic write used to install ours in their place). Whatever other
    /// tests ran first, after a write each is still a disposition (default or ignored), never
    /// a handler function. The `mp4probe`
    /// tool asks for them (`TemporaryFiles.removeOnTerminationSignals()`); that the tool still
    /// removes its temporaries when interrupted is FaststartRewriterTests' signal test.
    @Test func aWriteInstallsNoSignalHandlers() throws {
        let directory = FileSystem.temporaryDirectory("mp4probe-atomic")
        defer { FileSystem.removeDirectory(directory) }
        let writer = try AtomicFileWriter(destination: directory + "/out.bin", permissions: 0o644)
        try writer.write([1, 2, 3], at: 0)
        try writer.commit()
        for signal in [SIGINT, SIGTERM, SIGHUP] {
            var action = sigaction()
            #expect(sigaction(signal, nil, &action) == 0)
            #if canImport(Glibc)
            let handler = action.__sigaction_handler.sa_handler
            #else
            let handler = action.__sigaction_u.__sa_handler
            #endif
            let value = handler.map { unsafeBitCast($0, to: Int.self) } ?? 0
            #expect(value == unsafeBitCast(SIG_DFL, to: Int.self) || value == unsafeBitCast(SIG_IGN, to: Int.self),
                    "signal \(signal) has a handler after a library write")
        }
    }

    /// Without handlers, a temporary table left by a process that is gone is removed by the
    /// next eviction of its cache directory; one whose process lives (this one) is kept, and so
    /// are files that are not ours.
    @Test func evictionRemovesTheTemporariesOfProcessesThatAreGone() throws {
        let directory = FileSystem.temporaryDirectory("mp4probe-stale")
        defer { FileSystem.removeDirectory(directory) }
        // A process id that is not running: the largest Linux allows is 4,194,304.
        let gone = ".abc.ranges.mp4probe-2147483600-x1y2z3.tmp"
        let alive = ".abc.ranges.mp4probe-\(getpid())-x1y2z3.tmp"
        let foreign = ".abc.ranges.other-2147483600-x1y2z3.tmp"
        for name in [gone, alive, foreign] { try Data([1]).write(to: URL(fileURLWithPath: directory + "/" + name)) }
        try CacheDirectory.evict(directory, toAtMost: 1 << 30)
        let left = Set(FileSystem.entries(directory))
        #expect(!left.contains(gone))
        #expect(left.contains(alive) && left.contains(foreign))
    }

    @Test func theWriterOfATemporaryIsReadFromItsName() {
        #expect(AtomicFileWriter.writerProcess(ofTemporary: ".film.mp4.mp4probe-123-abc.tmp", base: "film.mp4") == 123)
        #expect(AtomicFileWriter.writerProcess(ofTemporary: ".film.mp4.mp4probe-123-abc.tmp", base: "other.mp4") == nil)
        #expect(AtomicFileWriter.writerProcess(ofTemporary: ".a-b.mp4probe-x.mp4probe-77-abc.tmp", base: nil) == 77)
        #expect(AtomicFileWriter.writerProcess(ofTemporary: ".film.mp4probe--5-abc.tmp", base: nil) == nil)
    }
}
