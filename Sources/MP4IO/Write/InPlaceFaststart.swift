import Foundation
import MP4Core
import MP4ProbeSystem
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Faststart of a file in place in O(moov): ``FaststartInsertion`` executed with
/// `fallocate(FALLOC_FL_INSERT_RANGE)` (ext4 and XFS on Linux), journaled so that a crash at
/// any point leaves a file that the next mp4probe command turns into either the original or
/// the result, byte for byte.
///
/// The steps, each durable before the next:
/// 1. The journal `.NAME.mp4probe-journal` beside the file, phase `inserting`: which file
///    (device, inode, size), the inserted length and the end step.
/// 2. The space is inserted at offset 0: every original byte is still there, moved up.
/// 3. The head (leading boxes, the new `moov`, the `free` header) is written into the space.
/// 4. The journal's phase becomes `finishing`: from here on the operation goes forward.
/// 5. The old `moov` is cut off (or turned into `free`).
/// 6. The journal is removed.
///
/// ``recover(path:)`` (run by ``SourceFactory/open(_:options:)`` and the faststart command
/// before they touch a file) reads a journal left by a crash: in phase `inserting` it removes
/// the inserted space again (`FALLOC_FL_COLLAPSE_RANGE`): the original; in phase `finishing`
/// it repeats step 5: the result.
///
/// One owner: the operation and every recovery hold the file's ``FileOwnerLock`` from before
/// they read the journal until after they remove it. A command that finds a journal while the
/// operation that wrote it is alive waits for it (bounded) instead of undoing it, and two
/// recoveries of one crash run one after the other, the second finding nothing to do.
///
/// Readers that had the file open before it started see its bytes move under them; the copy
/// path (``FaststartRewriter`` with `--atomic`) is the one to use when a file is being served.
public enum InPlaceFaststart {
    /// How a run ended.
    public enum Outcome: Sendable {
        /// The file was rewritten; the plan that was executed.
        case rewritten(FaststartInsertion)
        /// Nothing to move (already faststart, fragmented).
        case nothingToDo
        /// The insertion cannot be used here (filesystem, platform, another writer, a layout
        /// it does not handle); the reason. Nothing was changed: use the copy path.
        case unavailable(String)
    }

    /// What ``recover(path:)`` did.
    public enum Recovery: Sendable, Equatable {
        /// The interrupted operation was undone: the file is the original.
        case rolledBack
        /// The interrupted operation was finished: the file is the faststart result.
        case finished
    }

    /// The journal of `path`: `.NAME.mp4probe-journal` in the same directory.
    public static func journalPath(for path: String) -> String {
        let (directory, name) = Platform.split(path)
        return Platform.path(in: directory, "." + name + ".mp4probe-journal")
    }

    /// The journal's content.
    struct Journal: Codable, Equatable {
        static let formatVersion = 1
        var version = Journal.formatVersion
        var device: UInt64
        var inode: UInt64
        var inputSize: UInt64
        var insertedLength: UInt64
        var outputSize: UInt64
        /// `cut` or `free`, and the offset (after the insertion) it applies to.
        var tail: String
        var tailOffset: UInt64
        /// `inserting` or `finishing`.
        var phase: String
        var checksum: String = ""

        /// Sizes and offsets a run of ours could have written (the checksum is no defence: a
        /// journal is a file anyone can write): an insertion of whole 512-byte units up to
        /// 1 GiB, sizes far from overflowing 64 bits, the end step inside the grown file.
        var isPlausible: Bool {
            insertedLength > 0 && insertedLength <= 1 << 30 && insertedLength % 512 == 0
                && inputSize <= UInt64(Int64.max) - (1 << 31) && outputSize <= inputSize + insertedLength
                && tailOffset <= inputSize + insertedLength
        }

        func computedChecksum() -> String {
            let text = "\(version)|\(device)|\(inode)|\(inputSize)|\(insertedLength)|\(outputSize)|\(tail)|\(tailOffset)|\(phase)"
            return String(FNV1a.hash(text.utf8), radix: 16)
        }

        func write(to path: String) throws {
            var sealed = self
            sealed.checksum = computedChecksum()
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            let writer = try AtomicFileWriter(destination: path, permissions: 0o600)
            try writer.write(Array(try encoder.encode(sealed)), at: 0)
            try writer.commit()
        }

        static func read(_ path: String) throws -> Journal? {
            // A journal is a few hundred bytes: anything larger is not one (and is not read).
            // Read as a cache file is (``CacheFiles``): a link, FIFO or device there is not
            // followed or waited on.
            let bytes: [UInt8]
            do {
                guard let read = try CacheFiles.read(path, limit: 4095, anyOwner: true) else { return nil }
                bytes = read
            } catch let error as MP4Error {
                throw MP4Error(.malformed, "the in-place faststart journal \(path) is damaged (\(error.message)); the file beside it may be mid-rewrite: check it, then remove the journal")
            }
            guard let journal = try? JSONDecoder().decode(Journal.self, from: Data(bytes)),
                  journal.version == formatVersion, journal.checksum == journal.computedChecksum(),
                  journal.phase == "inserting" || journal.phase == "finishing", journal.tail == "cut" || journal.tail == "free",
                  journal.isPlausible else {
                throw MP4Error(.malformed, "the in-place faststart journal \(path) is damaged; the file beside it may be mid-rewrite: check it, then remove the journal")
            }
            return journal
        }
    }

    /// Test hooks at each step (`journal`, `inserted`, `half-head`, `head`, `finishing`,
    /// `tail`): `MP4PROBE_TEST_CRASH_AT=STEP` kills the process with SIGKILL there, as a crash
    /// would; ``failingStep`` (tests in process) throws there, as a full disk would.
    static func crashPoint(_ step: String, path: String) throws {
        if let wanted = ProcessInfo.processInfo.environment["MP4PROBE_TEST_CRASH_AT"], wanted == step {
            kill(getpid(), SIGKILL)
        }
        pausePoint(step)
        if let failing = failingStep.withLock({ $0 }), failing.step == step, failing.path == path {
            throw MP4Error(.io, "simulated failure at step \(step)")
        }
    }

    /// Test hook: `MP4PROBE_TEST_PAUSE_AT=STEP` holds the operation at that step for
    /// `MP4PROBE_TEST_PAUSE_MS` milliseconds (default 2,000), as a slow disk would, so that
    /// tests can run other commands beside a live operation.
    static func pausePoint(_ step: String) {
        let environment = ProcessInfo.processInfo.environment
        guard environment["MP4PROBE_TEST_PAUSE_AT"] == step else { return }
        let milliseconds = environment["MP4PROBE_TEST_PAUSE_MS"].flatMap { UInt32($0) } ?? 2000
        usleep(min(milliseconds, 60_000) * 1000)
    }

    /// Tests only: the file (as resolved) and step at which ``run(path:limits:)`` throws.
    static let failingStep = Locked<(path: String, step: String)?>(nil)

    /// Whether the filesystem of `directory` can insert space into files (tried on a small
    /// temporary file there, removed after).
    public static func filesystemInsertsSpace(in directory: String) -> Bool {
        let path = directory + "/.mp4probe-insert-probe-" + Platform.randomSuffix()
        let fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return false }
        defer { Platform.closeFile(fd); Platform.removeFile(path) }
        let block = blockSize(fd)
        guard (try? Platform.writeFully(fd, [UInt8](repeating: 1, count: Int(block) * 2), offset: 0, path: path)) != nil else { return false }
        return mp4probe_insert_range(fd, 0, Int64(block)) == 0
    }

    /// The allocation unit insertions must be multiples of: the filesystem's block size
    /// (`st_blksize`), at least 4 KiB.
    static func blockSize(_ fd: Int32) -> UInt64 {
        var info = stat()
        guard fstat(fd, &info) == 0 else { return 4096 }
        return max(UInt64(info.st_blksize), 4096)
    }

    /// Moves `moov` of the file at `path` in front of its media in place. Runs ``recover(path:)``
    /// first.
    /// - Throws: ``MP4Error`` `.unsupported` for files the rewrite refuses, `.io` when a step
    ///   fails (the journal then says how the next command finishes or undoes it).
    public static func run(path given: String, limits: ParseLimits = ParseLimits()) async throws -> Outcome {
        #if os(Linux)
        // A symbolic link is written through (the journal goes beside the file itself).
        let path = Platform.resolvedPath(given) ?? given
        // Another writer would write at offsets that move under it (asked before our own
        // read-write descriptor exists: the lease counts it too).
        if isOpenForWritingElsewhere(path) == true { return .unavailable("another process has \(path) open for writing") }
        // One owner: another in-place faststart or recovery of this file is waited for (they
        // take well under a second), and then this one finds the file as it left it.
        guard let owner = try FileOwnerLock.take(path, waitingUpTo: ownerWait) else {
            return .unavailable("another process is reading or rewriting \(path) (it held the file for \(Int(ownerWait)) s)")
        }
        defer { owner.release() }
        let fd = owner.fd
        _ = try recover(owner, path: path)
        let status = try Platform.status(fd, path: path)
        guard status.isRegularFile else { return .unavailable("\(path) is not a regular file") }
        let source = try FileSource(path: path)
        let file = try await MP4File.open(source, options: MP4File.Options(limits: limits, facts: .structure))
        let plan: FaststartInsertion?
        do {
            plan = try await FaststartInsertion.make(file, source: source, blockSize: blockSize(fd))
        } catch let error as MP4Error where error.kind == .unsupported {
            return .unavailable(error.message)
        }
        guard let plan else { return .nothingToDo }
        guard UInt64(plan.head.count) <= plan.insertedLength, status.size == plan.inputSize else {
            throw MP4Error(.internalError, "the insertion plan does not fit the file (a bug; nothing was changed)")
        }
        let journalPath = journalPath(for: path)
        let directory = Platform.split(journalPath).directory
        var journal = Journal(plan, of: status)
        try journal.write(to: journalPath)
        do {
            try crashPoint("journal", path: path)
            // The insertion drops every cached page of the file, on one thread; drop them
            // first on every core (a 1.4 GB cached file on ext4: 66-88 ms alone, 40-45 ms on
            // two threads).
            let cores = Int32(clamping: sysconf(Int32(_SC_NPROCESSORS_ONLN)))
            if cores > 1 { mp4probe_drop_cached_pages(fd, 0, Int64(clamping: status.size), cores) }
            if mp4probe_insert_range(fd, 0, Int64(plan.insertedLength)) != 0 {
                let code = errno
                Platform.removeFile(journalPath)
                Platform.syncDirectory(directory)
                return .unavailable("the filesystem cannot insert space into the file (\(String(cString: strerror(code))))")
            }
            try Platform.sync(fd, path: path)
            try crashPoint("inserted", path: path)
            let half = plan.head.count / 2
            try Platform.writeFully(fd, plan.head[..<half], offset: 0, path: path)
            try crashPoint("half-head", path: path)
            try Platform.writeFully(fd, plan.head[half...], offset: UInt64(half), path: path)
            try Platform.sync(fd, path: path, for: .durableData)
            try crashPoint("head", path: path)
            journal.phase = "finishing"
            try journal.write(to: journalPath)
            try crashPoint("finishing", path: path)
            try finish(fd, journal, path: path)
            try crashPoint("tail", path: path)
        } catch {
            // A step failed (a full disk, an I/O error): the journal says how to go back or
            // on; do it now (still the owner) rather than leave it to the next command. If that
            // fails too, the journal stays for the next command, and the error says so.
            do {
                _ = try recover(owner, path: path)
            } catch let recovery as MP4Error {
                throw MP4Error(.io, "\(path): in-place faststart failed (\(error)) and could not be undone (\(recovery.message)); the journal \(journalPath) stays, and the next mp4probe command that opens the file finishes or undoes it")
            }
            throw error
        }
        Platform.removeFile(journalPath)
        Platform.syncDirectory(directory)
        return .rewritten(plan)
        #else
        return .unavailable("inserting space into a file needs Linux (fallocate)")
        #endif
    }

    /// Step 5: the old `moov` cut off or turned into `free` (both can be repeated).
    static func finish(_ fd: Int32, _ journal: Journal, path: String) throws {
        if journal.tail == "cut" {
            try Platform.truncate(fd, size: journal.tailOffset, path: path)
        } else {
            try Platform.writeFully(fd, Array("free".utf8), offset: journal.tailOffset, path: path)
        }
        try Platform.sync(fd, path: path)
    }

    /// Whether another process has `path` open for writing: `nil` when it cannot be told
    /// (leases need the file's owner, or Linux).
    public static func isOpenForWritingElsewhere(_ path: String) -> Bool? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { Platform.closeFile(fd) }
        // A process being started by another thread holds copies of its parent's descriptors
        // until it runs its program (milliseconds under load; the crash test's reference run
        // fell back to copying once in CI): a writer must still be there after 50 ms.
        for attempt in 0..<6 {
            switch mp4probe_opened_for_writing_elsewhere(fd) {
            case 1: if attempt < 5 { usleep(10_000) }
            case 0: return false
            default: return nil
            }
        }
        return true
    }

    /// How long an owner waits for another owner of the same file (seconds).
    static let ownerWait: Double = 30
    /// How long a reader that finds a journal waits for the operation that wrote it to end
    /// (seconds): an in-place faststart of a 4.6 GB film takes about 0.2 s.
    public static let readerWait: Double = 10

    /// Finishes or undoes an in-place faststart of `path` that a crash interrupted; `nil` when
    /// there is no journal, or when the operation that wrote it was alive and ended within
    /// `wait` seconds (it removed its journal). Only the owner of the file's lock
    /// (``FileOwnerLock``) acts on a journal, so two recoveries of one crash, or a recovery and
    /// the live operation, never both act: the second finds the journal gone.
    /// - Throws: ``MP4Error`` when the journal is damaged or does not describe the file as it
    ///   is (then nothing is changed, and the message says what to check), and `.io` when
    ///   another process still holds the file after `wait` seconds (an operation under way:
    ///   left alone).
    @discardableResult
    public static func recover(path given: String, waitingUpTo wait: Double = readerWait) throws -> Recovery? {
        let path = Platform.resolvedPath(given) ?? given
        let journalPath = journalPath(for: path)
        guard Platform.exists(journalPath) else { return nil }
        guard let owner = try FileOwnerLock.take(path, waitingUpTo: wait) else {
            throw MP4Error(.io, "an in-place faststart of \(path) is under way in another process (journal \(journalPath)); it was left alone: try again when it has ended")
        }
        defer { owner.release() }
        return try recover(owner, path: path)
    }

    /// The recovery, by the owner of the file's lock. Every step is durable before the next
    /// and the journal goes last, so a recovery interrupted anywhere is finished by the next
    /// one, and recovering a recovered file changes nothing.
    static func recover(_ owner: FileOwnerLock, path: String) throws -> Recovery? {
        let journalPath = journalPath(for: path)
        // A journal being written when its process died (a kill between the temporary file and
        // its rename) is left as a temporary: only an owner writes the journal, so under the
        // lock every one is a dead writer's (16 of 284 kills at the second rename left one).
        AtomicFileWriter.removeTemporaries(besideLocked: journalPath)
        // Read under the lock: an owner that held it until now has removed its journal.
        guard Platform.exists(journalPath) else { return nil }
        guard let journal = try Journal.read(journalPath) else { return nil }
        let directory = Platform.split(journalPath).directory
        let fd = owner.fd
        let status = try Platform.status(fd, path: path)
        guard status.isRegularFile else {
            throw MP4Error(.io, "\(path) is not a regular file, but an in-place faststart journal (\(journalPath)) names it; nothing was changed")
        }
        guard status.device == journal.device, status.inode == journal.inode else {
            throw MP4Error(.io, "the in-place faststart journal \(journalPath) describes another file than \(path) (it was replaced); nothing was changed: remove the journal if \(path) is intact")
        }
        let inserted = journal.inputSize + journal.insertedLength
        let outcome: Recovery
        if journal.phase == "inserting" {
            if status.size == inserted {
                if mp4probe_collapse_range(fd, 0, Int64(journal.insertedLength)) != 0 {
                    throw Platform.ioError("cannot remove the space inserted into \(path) (journal \(journalPath))")
                }
                try Platform.sync(fd, path: path)
            } else if status.size != journal.inputSize {
                throw MP4Error(.io, "\(path) is \(status.size) bytes, neither its size before (\(journal.inputSize)) nor after the insertion (\(inserted)) that \(journalPath) records; nothing was changed")
            }
            outcome = .rolledBack
        } else {
            let done = journal.tail == "cut" ? journal.tailOffset : inserted
            guard status.size == inserted || status.size == done else {
                throw MP4Error(.io, "\(path) is \(status.size) bytes, not the \(inserted) or \(done) bytes that \(journalPath) records; nothing was changed")
            }
            try finish(fd, journal, path: path)
            outcome = .finished
        }
        Platform.removeFile(journalPath)
        Platform.syncDirectory(directory)
        return outcome
    }
}

extension InPlaceFaststart.Journal {
    /// The journal of `plan` for the file `status` describes, before its first step.
    init(_ plan: FaststartInsertion, of status: Platform.FileStatus) {
        let (tail, offset): (String, UInt64)
        switch plan.tail {
        case .cut(let at): (tail, offset) = ("cut", at)
        case .free(let at): (tail, offset) = ("free", at)
        }
        self.init(device: status.device, inode: status.inode, inputSize: status.size, insertedLength: plan.insertedLength,
                  outputSize: plan.outputSize, tail: tail, tailOffset: offset, phase: "inserting")
    }
}
