import Foundation
import Testing
@testable import MP4Core
@testable import MP4IO
import MP4TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// Faststart in place by inserting space (`FALLOC_FL_INSERT_RANGE`): every moov-at-end sample
/// comes out faststart with every sample's bytes unchanged and decodes the same; a crash at
/// every step (the process SIGKILLed) is finished or undone by the next command, byte for
/// byte; journals that do not describe the file are refused. Skipped, with a message, where
/// the filesystem of the temporary directory cannot insert space.
@Suite(.serialized) struct InPlaceFaststartTests {
    static let movieAtEnd = ["moov-at-end.mp4", "largesize-mdat.mp4", "two-mdat-free.mp4", "ac3.mp4", "alac.m4a", "audio-edit-list.m4a", "quicktime.mov"]
    static let ffmpeg = Executables.find("ffmpeg")

    /// A copy of sample `name` in a new directory.
    static func copy(_ name: String) throws -> (String, String) {
        let directory = FileSystem.temporaryDirectory("mp4probe-inplace")
        let path = directory + "/" + name
        #expect(FileSystem.write(try #require(FileSystem.read(Fixtures.sample(name))), to: path))
        return (directory, path)
    }

    /// A copy of moov-at-end.mp4, its bytes, and the bytes of an uninterrupted in-place run
    /// on another copy (what a finished recovery must give).
    static func copyWithResult() async throws -> (directory: String, path: String, original: [UInt8], finished: [UInt8]) {
        let (directory, path) = try copy("moov-at-end.mp4")
        let original = try #require(FileSystem.read(path))
        let reference = directory + "/reference.mp4"
        FileSystem.write(original, to: reference)
        // The result the crash tests compare with must be a real insertion: a fallback here
        // (it happened once under CI load) would make "finished" mean "original".
        guard case .rewritten = try await InPlaceFaststart.run(path: reference) else {
            throw MP4Error(.internalError, "the reference in-place run did not insert space")
        }
        return (directory, path, original, try #require(FileSystem.read(reference)))
    }

    /// Whether this filesystem inserts space; records why not (the tests then skip).
    static let insertionWorks: Bool = {
        let directory = FileSystem.temporaryDirectory("mp4probe-insert-probe")
        defer { FileSystem.removeDirectory(directory) }
        return InPlaceFaststart.filesystemInsertsSpace(in: directory)
    }()

    static func framemd5(_ path: String) async -> String {
        guard let ffmpeg else { return "" }
        return await Executables.runOffPool(ffmpeg, ["-v", "error", "-nostdin", "-i", path, "-map", "0", "-f", "framemd5", "-"])
    }

    /// The journal sits beside the file, named from the path as given (no lookup): relative,
    /// absolute, at the root (the atomic writer's temporary files are named the same way).
    @Test func journalPathsAreBesideTheFile() {
        #expect(InPlaceFaststart.journalPath(for: "a.mp4") == "./.a.mp4.mp4probe-journal")
        #expect(InPlaceFaststart.journalPath(for: "d/a.mp4") == "d/.a.mp4.mp4probe-journal")
        #expect(InPlaceFaststart.journalPath(for: "/d/e/a.mp4") == "/d/e/.a.mp4.mp4probe-journal")
        #expect(InPlaceFaststart.journalPath(for: "/a.mp4") == "/.a.mp4.mp4probe-journal")
        #expect(Platform.split("a") == (".", "a") && Platform.split("/") == ("/", ""))
        #expect(Platform.path(in: "/", "a") == "/a" && Platform.path(in: "d", "a") == "d/a")
    }

    @Test(arguments: movieAtEnd)
    func everyMoovAtEndSampleIsRewrittenInPlace(_ name: String) async throws {
        guard Self.insertionWorks else { print("skipped: the temporary directory's filesystem cannot insert space (FALLOC_FL_INSERT_RANGE)"); return }
        let (directory, path) = try Self.copy(name)
        defer { FileSystem.removeDirectory(directory) }
        let original = try #require(FileSystem.read(path))
        let expectedFrames = await Self.framemd5(path)
        FileSystem.write(original, to: directory + "/original")
        guard case .rewritten(let plan) = try await InPlaceFaststart.run(path: path) else {
            Issue.record("\(name) was not rewritten in place"); return
        }
        let result = try #require(FileSystem.read(path))
        #expect(UInt64(result.count) == plan.outputSize)
        #expect(plan.insertedLength % 4096 == 0 && UInt64(plan.head.count) <= plan.insertedLength)
        #expect(!FileSystem.exists(InPlaceFaststart.journalPath(for: path)), "the journal is removed")
        // Faststart, and every sample of every track holds the input's bytes.
        let samples = try await FaststartRewriter.verify(input: directory + "/original", output: path)
        #expect(samples > 0)
        let layout = try await MP4File.open(try FileSource(path: path)).layout
        #expect(layout.isFastStart && layout.boxes.map(\.type).filter { $0 == .moov }.count == 1, "\(layout.boxes.map(\.type))")
        #expect(layout.boxes.map { $0.offset } == plan.boxes.map(\.outputOffset), "the reported layout is the file's")
        if Self.ffmpeg != nil { #expect(await Self.framemd5(path) == expectedFrames, "\(name) decodes differently") }
        // Again: nothing to do.
        guard case .nothingToDo = try await InPlaceFaststart.run(path: path) else { Issue.record("a faststart file was rewritten again"); return }
    }

    /// The process is SIGKILLed at every step; the next `mp4probe info` leaves the original
    /// (before the journal says `finishing`) or the uninterrupted result (after), byte for
    /// byte, and no journal.
    @Test(arguments: ["journal", "inserted", "half-head", "head", "finishing", "tail"])
    func aCrashAtEveryStepIsFinishedOrUndone(_ step: String) async throws {
        guard Self.insertionWorks else { print("skipped: the temporary directory's filesystem cannot insert space"); return }
        let mp4probe = try #require(Executables.mp4probe, "the mp4probe executable is not built")
        let (directory, path, original, finished) = try await Self.copyWithResult()
        defer { FileSystem.removeDirectory(directory) }

        let status = await Executables.offPool { () -> Int32 in
            let process = Process()
            process.executableURL = URL(fileURLWithPath: mp4probe)
            process.arguments = ["faststart", "--in-place", path]
            process.environment = ProcessInfo.processInfo.environment.merging(["MP4PROBE_TEST_CRASH_AT": step]) { $1 }
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            guard (try? process.run()) != nil else { return -1 }
            process.waitUntilExit()
            return process.terminationReason == .uncaughtSignal ? process.terminationStatus : 0
        }
        #expect(status == SIGKILL, "mp4probe was not killed at \(step)")
        #expect(FileSystem.exists(InPlaceFaststart.journalPath(for: path)), "a crash at \(step) left no journal")
        let interrupted = try #require(FileSystem.read(path))
        #expect(interrupted != original || step == "journal", "the crash at \(step) came before any change: the test proves nothing")
        let info = await Executables.runOffPool(mp4probe, ["info", path], stderrToStdout: true)
        let expected = ["journal", "inserted", "half-head", "head"].contains(step) ? original : finished
        #expect(FileSystem.read(path) == expected, "after a crash at \(step) and recovery the file is neither the original nor the result")
        #expect(info.contains(expected == original ? "was undone" : "was finished"), "\(info)")
        #expect(!FileSystem.exists(InPlaceFaststart.journalPath(for: path)))
        if Self.ffmpeg != nil { #expect(await Self.framemd5(path) == Self.framemd5(Fixtures.sample("moov-at-end.mp4"))) }
    }

    /// A journal's temporary file left by a writer killed before its rename is removed by the
    /// next in-place run, whose lock makes every such file a dead writer's, even when its
    /// process id is in use again (here: this process's, and init's). Before, it stayed
    /// beside the film for good.
    @Test func aJournalsLeftoverTemporaryIsRemovedByTheNextRun() async throws {
        guard Self.insertionWorks else { print("skipped: the temporary directory's filesystem cannot insert space"); return }
        let (directory, path) = try Self.copy("moov-at-end.mp4")
        defer { FileSystem.removeDirectory(directory) }
        let (_, journalName) = Platform.split(InPlaceFaststart.journalPath(for: path))
        let leftovers = ["\(Platform.processID)-a1b2", "1-c3d4"].map { directory + "/." + journalName + ".mp4probe-" + $0 + ".tmp" }
        for leftover in leftovers { #expect(FileSystem.write(Array("{\"phase\":\"inser".utf8), to: leftover)) }
        let unrelated = directory + "/.other.mp4.mp4probe-1-e5f6.tmp"
        #expect(FileSystem.write([1], to: unrelated))
        guard case .rewritten = try await InPlaceFaststart.run(path: path) else { Issue.record("not rewritten"); return }
        for leftover in leftovers { #expect(!FileSystem.exists(leftover), "\(leftover) is still there") }
        #expect(FileSystem.exists(unrelated), "a temporary of another file was removed")
    }

    /// A step that fails (as on a full disk) is undone or finished before the error is
    /// thrown: no journal is left, and the file is the original (before `finishing`) or the
    /// result (after).
    @Test(arguments: ["journal", "inserted", "half-head", "head", "finishing", "tail"])
    func aFailedStepIsUndoneOrFinishedAtOnce(_ step: String) async throws {
        guard Self.insertionWorks else { print("skipped: the temporary directory's filesystem cannot insert space"); return }
        let (directory, path, original, finished) = try await Self.copyWithResult()
        defer { FileSystem.removeDirectory(directory) }
        let resolved = try #require(Platform.resolvedPath(path))
        InPlaceFaststart.failingStep.withLock { $0 = (resolved, step) }
        defer { InPlaceFaststart.failingStep.withLock { $0 = nil } }
        await #expect(throws: MP4Error.self) { _ = try await InPlaceFaststart.run(path: path) }
        let expected = ["finishing", "tail"].contains(step) ? finished : original
        #expect(FileSystem.read(path) == expected, "after a failure at \(step) the file is neither the original nor the result")
        #expect(!FileSystem.exists(InPlaceFaststart.journalPath(for: path)), "a failure at \(step) left its journal")
    }

    /// A journal for another file (the file was replaced), or a damaged one, changes nothing
    /// and says so; a file open for writing elsewhere is not rewritten in place.
    @Test func journalsThatDoNotFitAndOtherWritersAreRefused() async throws {
        guard Self.insertionWorks else { print("skipped: the temporary directory's filesystem cannot insert space"); return }
        let (directory, path) = try Self.copy("moov-at-end.mp4")
        defer { FileSystem.removeDirectory(directory) }
        let original = try #require(FileSystem.read(path))
        let journal = InPlaceFaststart.journalPath(for: path)
        let status = try #require(Platform.status(path: path))
        try InPlaceFaststart.Journal(device: status.device, inode: status.inode + 1, inputSize: status.size, insertedLength: 4096,
                                     outputSize: status.size, tail: "cut", tailOffset: status.size, phase: "inserting").write(to: journal)
        #expect(throws: MP4Error.self) { try InPlaceFaststart.recover(path: path) }
        FileSystem.write(Array("{\"version\":1}".utf8), to: journal)
        #expect(throws: MP4Error.self) { try InPlaceFaststart.recover(path: path) }
        await #expect(throws: MP4Error.self) { _ = try await SourceFactory.open(path) }
        #expect(FileSystem.read(path) == original)
        // A journal of this file whose size matches neither side: refused too.
        try InPlaceFaststart.Journal(device: status.device, inode: status.inode, inputSize: status.size + 1, insertedLength: 4096,
                                     outputSize: status.size, tail: "cut", tailOffset: status.size, phase: "inserting").write(to: journal)
        #expect(throws: MP4Error.self) { try InPlaceFaststart.recover(path: path) }
        #expect(FileSystem.read(path) == original)
        // Sizes no run of ours writes, with a valid checksum (anyone can compute it): refused,
        // never a trap on overflow.
        for (inserted, size) in [(UInt64.max, status.size), (4096, UInt64.max), (4097, status.size), (0, status.size)] {
            try InPlaceFaststart.Journal(device: status.device, inode: status.inode, inputSize: size, insertedLength: inserted,
                                         outputSize: status.size, tail: "cut", tailOffset: status.size, phase: "finishing").write(to: journal)
            #expect(throws: MP4Error.self) { try InPlaceFaststart.recover(path: path) }
        }
        #expect(FileSystem.read(path) == original)
        unlink(journal)

        // Another open file description writing to it: no insertion.
        let writer = open(path, O_WRONLY)
        #expect(writer >= 0)
        if InPlaceFaststart.isOpenForWritingElsewhere(path) != nil {
            guard case .unavailable(let reason) = try await InPlaceFaststart.run(path: path) else {
                Issue.record("rewritten in place while another descriptor had it open for writing"); close(writer); return
            }
            #expect(reason.contains("open for writing"))
            #expect(FileSystem.read(path) == original)
        }
        close(writer)
    }

    /// Hard links keep pointing at one file (the copy path refuses them); a symbolic link is
    /// written through, the journal beside the file it points to.
    @Test func linksKeepTheirFile() async throws {
        guard Self.insertionWorks else { print("skipped: the temporary directory's filesystem cannot insert space"); return }
        let (directory, path) = try Self.copy("moov-at-end.mp4")
        defer { FileSystem.removeDirectory(directory) }
        #expect(link(path, directory + "/hard.mp4") == 0 && symlink(path, directory + "/soft.mp4") == 0)
        guard case .rewritten = try await InPlaceFaststart.run(path: directory + "/soft.mp4") else { Issue.record("not rewritten"); return }
        #expect(Platform.isSymbolicLink(directory + "/soft.mp4"))
        let result = try #require(FileSystem.read(path))
        #expect(FileSystem.read(directory + "/hard.mp4") == result)
        #expect(try await MP4File.open(try FileSource(path: directory + "/hard.mp4")).layout.isFastStart)
    }

    /// Two samples, the last just below 4 GiB in a sparse file: inserting space pushes it past
    /// 2^32, so `stco` becomes `co64`, and both samples are found at their new offsets. The
    /// space is inserted, not copied: the file still occupies a few blocks.
    @Test func offsetsPushedPast4GiBArePromoted() async throws {
        guard Self.insertionWorks else { print("skipped: the temporary directory's filesystem cannot insert space"); return }
        let directory = FileSystem.temporaryDirectory("mp4probe-inplace-4g")
        defer { FileSystem.removeDirectory(directory) }
        let path = directory + "/big.mp4"
        let sparse = try #require(FaststartRewriterTests.writeSparseNear4GiB(to: path))
        guard case .rewritten(let plan) = try await InPlaceFaststart.run(path: path) else { Issue.record("not rewritten"); return }
        #expect(plan.promotedTableCount == 1, "no stco was promoted: the test proves nothing")
        let file = try await MP4File.open(try FileSource(path: path))
        #expect(file.layout.isFastStart && file.movie?.tracks.first?.usesLargeChunkOffsets == true)
        let track = try #require(SeekPlanner(file: file).tracks.first)
        let s0 = try #require(track.samples.sample(at: 0)), s1 = try #require(track.samples.sample(at: 1))
        #expect(s0.byteOffset == sparse.first + plan.insertedLength && s1.byteOffset == sparse.last + plan.insertedLength)
        let source = try FileSource(path: path)
        #expect(try await source.read(s0.byteOffset..<s0.endOffset) == sparse.sampleA)
        #expect(try await source.read(s1.byteOffset..<s1.endOffset) == sparse.sampleB)
        #expect(FileSystem.allocatedBytes(path) < 16 << 20, "the insertion allocated \(FileSystem.allocatedBytes(path)) bytes")
    }
}

/// `faststart IN OUT` sharing IN's blocks (`FICLONERANGE`) on a filesystem that offers it,
/// named by `MP4PROBE_REFLINK_DIR` (`.ci/run` mounts a loop XFS there). Skipped, with a
/// message, without one.
@Suite(.serialized) struct FaststartCloningTests {
    static let directory: String? = {
        guard let directory = ProcessInfo.processInfo.environment["MP4PROBE_REFLINK_DIR"], FileSystem.exists(directory) else { return nil }
        return directory
    }()

    static func skipMessage() -> String {
        "skipped: no reflink filesystem (set MP4PROBE_REFLINK_DIR to a directory on XFS or Btrfs; .ci/run mounts one)"
    }

    @Test(arguments: InPlaceFaststartTests.movieAtEnd)
    func everyMoovAtEndSampleIsClonedAndVerified(_ name: String) async throws {
        guard let base = Self.directory else { print(Self.skipMessage()); return }
        let directory = base + "/clone-" + String(UInt64.random(in: 0...UInt64.max), radix: 36)
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { FileSystem.removeDirectory(directory) }
        let input = directory + "/" + name, output = directory + "/out-" + name
        FileSystem.write(try #require(FileSystem.read(Fixtures.sample(name))), to: input)
        let result = try await FaststartRewriter.rewrite(input: input, output: output, options: .init(verifies: true))
        let cloned = try #require(result.clonedLayout, "\(name) was copied, not cloned, on \(base)")
        #expect((result.verifiedSampleCount ?? 0) > 0)
        #expect(UInt64(FileSystem.read(output)?.count ?? 0) == cloned.outputSize)
        #expect(try await MP4File.open(try FileSource(path: output)).layout.isFastStart)
        if InPlaceFaststartTests.ffmpeg != nil {
            #expect(await InPlaceFaststartTests.framemd5(output) == InPlaceFaststartTests.framemd5(input))
        }
        // In place on this filesystem too.
        guard case .rewritten = try await InPlaceFaststart.run(path: input) else { Issue.record("not rewritten in place on \(base)"); return }
        #expect(FileSystem.read(input) == FileSystem.read(output), "in place and cloned, the same layout")
    }

    /// `faststart IN OUT` of a file that is already faststart writes it unchanged: as a clone
    /// of the whole file (`FICLONE` here; `fclonefileat` on APFS, the same code path), byte
    /// for byte the input; and by copying when cloning is turned off.
    @Test func anUnchangedFileIsClonedWhole() async throws {
        guard let base = Self.directory else { print(Self.skipMessage()); return }
        let directory = base + "/whole-" + String(UInt64.random(in: 0...UInt64.max), radix: 36)
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { FileSystem.removeDirectory(directory) }
        let input = directory + "/faststart.mp4"
        let bytes = try #require(FileSystem.read(Fixtures.sample("faststart.mp4")))
        FileSystem.write(bytes, to: input)
        let cloned = try await FaststartRewriter.rewrite(input: input, output: directory + "/out.mp4", options: .init(verifies: true))
        #expect(cloned.clonedWholeFile && cloned.plan.verdict != .rewrite)
        #expect(FileSystem.read(directory + "/out.mp4") == bytes)
        #expect(FileSystem.entries(directory).sorted() == ["faststart.mp4", "out.mp4"], "temporary files left")
        var options = FaststartRewriter.Options()
        options.clones = false
        let copied = try await FaststartRewriter.rewrite(input: input, output: directory + "/copy.mp4", options: options)
        #expect(!copied.clonedWholeFile && FileSystem.read(directory + "/copy.mp4") == bytes)
    }

    /// A 24 MB film cloned: the filesystem's free space drops by far less than the film (its
    /// blocks are shared), where a copy would take all of it.
    @Test(.requires("ffmpeg"))
    func aClonedFilmTakesNoSpace() async throws {
        guard let base = Self.directory else { print(Self.skipMessage()); return }
        let ffmpeg = try #require(InPlaceFaststartTests.ffmpeg)
        let directory = base + "/space-" + String(UInt64.random(in: 0...UInt64.max), radix: 36)
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { FileSystem.removeDirectory(directory) }
        let input = directory + "/film.mp4"
        _ = await Executables.runOffPool(ffmpeg, ["-v", "error", "-nostdin", "-y", "-f", "lavfi", "-i", "testsrc2=size=640x360:rate=25,noise=alls=60:allf=t",
                                                  "-t", "8", "-c:v", "libx264", "-preset", "ultrafast", "-qp", "10", input])
        let size = try #require(Platform.usage(input)?.size)
        #expect(size > 16 << 20, "the film is \(size) bytes: too small to tell")
        func free() -> UInt64 {
            var info = statvfs()
            return statvfs(directory, &info) == 0 ? UInt64(info.f_bavail) * UInt64(info.f_frsize) : 0
        }
        sync()
        let before = free()
        let result = try await FaststartRewriter.rewrite(input: input, output: directory + "/out.mp4")
        #expect(result.clonedLayout != nil)
        sync()
        let used = Int64(before) - Int64(free())
        #expect(used < Int64(size / 8), "cloning a \(size)-byte film used \(used) bytes of the filesystem")
        print("cloned a \(size)-byte film: \(used) bytes of the filesystem used")
    }
}
