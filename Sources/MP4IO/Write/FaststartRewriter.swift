import MP4Core

/// Executes a ``FaststartPlan`` on local files: the media is copied in large blocks inside the
/// kernel (`copy_file_range`, holes preserved), `moov` is the only thing held in memory, and the
/// output appears at its destination only when complete and flushed (``AtomicFileWriter``).
///
/// ```swift
/// let result = try await FaststartRewriter.rewrite(input: "in.mp4", output: "out.mp4")
/// print(result.plan.verdict, result.plan.relocatedOffsetCount)
/// ```
public enum FaststartRewriter {
    /// How the rewrite runs.
    public struct Options: Sendable {
        /// Rewrite the input itself (through a temporary file and a rename, keeping its
        /// permissions); `output` must then equal `input`.
        public var inPlace: Bool
        /// Drop top-level `free`/`skip` boxes.
        public var dropsPadding: Bool
        /// Re-read the output: it must be faststart and every sample's bytes must equal the
        /// input's.
        public var verifies: Bool
        /// Called with the bytes written so far and the total, every 64 MiB or so.
        public var progress: (@Sendable (UInt64, UInt64) -> Void)?
        /// Resource bounds for parsing the input.
        public var limits: ParseLimits
        /// Share the input's blocks with the output where the filesystem can (reflink);
        /// otherwise, and with `false`, the media is copied.
        public var clones = true
        /// Tests only: fail as if the disk were full once this many bytes were written.
        var failsAfterBytes: UInt64?

        public init(inPlace: Bool = false, dropsPadding: Bool = false, verifies: Bool = false, limits: ParseLimits = .default, progress: (@Sendable (UInt64, UInt64) -> Void)? = nil) {
            self.inPlace = inPlace
            self.dropsPadding = dropsPadding
            self.verifies = verifies
            self.limits = limits
            self.progress = progress
        }
    }

    /// What a rewrite did.
    public struct Result: Sendable {
        /// The plan that was executed (or that found nothing to do).
        public var plan: FaststartPlan
        /// Whether a file was written (`false` for an in-place run with nothing to do).
        public var wroteOutput: Bool
        /// Samples compared by ``Options/verifies`` (nil when not verified).
        public var verifiedSampleCount: Int?
        /// When OUT shares IN's blocks (reflink, XFS/Btrfs): the layout written, which is the
        /// in-place insertion's (``plan`` is then the copy's plan, not what was written).
        public var clonedLayout: FaststartInsertion?
        /// OUT is a clone of IN, written unchanged, sharing all its blocks (APFS, XFS, Btrfs).
        public var clonedWholeFile: Bool = false
    }

    /// Plans the rewrite of `input` without writing.
    public static func plan(input: String, options: Options = Options()) async throws -> FaststartPlan {
        try await opened(input: input, options: options).plan
    }

    /// `input` opened and planned: its source and file are kept for a clone, which plans its
    /// own layout from the same parse.
    static func opened(input: String, options: Options) async throws -> (source: FileSource, file: MP4File, plan: FaststartPlan) {
        // A copy reads its input under a shared lock as any reader (no in-place rewrite of it
        // begins meanwhile); an in-place one holds the owner's lock already.
        let source = try FileSource(path: input, sharedLockWait: options.inPlace ? nil : InPlaceFaststart.readerWait)
        let file = try await MP4File.open(source, options: MP4File.Options(limits: options.limits, facts: .structure))
        return (source, file, try await FaststartPlan.make(file, source: source, options: FaststartPlan.Options(dropsPadding: options.dropsPadding)))
    }

    /// Rewrites `input` to `output` (or in place). A file that is already faststart, or
    /// fragmented, is copied unchanged to `output` (left alone in place).
    /// - Throws: ``MP4Error`` — `.unsupported` when the file cannot be rewritten safely, `.io`
    ///   for read/write failures (nothing is left at the destination), `.malformed` when
    ///   verification finds a difference.
    /// Where a rewrite really writes: a symbolic link is written through, as `cp` does (the
    /// temporary file and the rename happen beside the file it points to, and the link stays
    /// a link); a dangling link is refused.
    static func destination(_ requestedOutput: String) throws -> String {
        guard Platform.isSymbolicLink(requestedOutput) else { return requestedOutput }
        guard let target = Platform.resolvedPath(requestedOutput) else {
            throw MP4Error(.unsupported, "\(requestedOutput) is a symbolic link to a file that does not exist (or a loop); nothing was written")
        }
        return target
    }

    /// Refuses to replace a file that has other names: they would stay on the old bytes.
    static func refuseHardLinks(_ output: String, named requestedOutput: String) throws {
        if let existing = Platform.status(path: output), existing.links > 1 {
            throw MP4Error(.unsupported, "\(requestedOutput) has \(existing.links) hard links; replacing it would leave the other names on the old file (rewrite to a new name, or remove the other links first); nothing was written")
        }
    }

    /// Rewrites the file of any byte source (a URL, a cache) to the local file `output`, by
    /// streaming its ``FaststartView`` in order: `ftyp` and `moov` first, then the media as
    /// the source delivers it. Same atomic output and verification as the local rewrite, but
    /// no kernel copy. Files the plan leaves alone are copied unchanged.
    public static func rewrite(source: any ByteSource, output requestedOutput: String, options: Options = Options()) async throws -> Result {
        guard !options.inPlace else { throw MP4Error(.unsupported, "an in-place rewrite needs a local file, not \(source.name)") }
        let output = try destination(requestedOutput)
        try refuseHardLinks(output, named: requestedOutput)
        let view = try await FaststartView.make(source, limits: options.limits, options: FaststartPlan.Options(dropsPadding: options.dropsPadding))
        let total = view.size
        AtomicFileWriter.removeStaleTemporaries(beside: output)
        let writer = try AtomicFileWriter(destination: output, permissions: 0o644)
        var verified: Int?
        do {
            var written: UInt64 = 0
            var progress = WriteProgress(total: total, options: options, path: writer.temporaryPath)
            try await view.read(0..<total) { piece in
                try writer.write(Array(piece), at: written)
                written += UInt64(piece.count)
                try progress.advance(to: written)
            }
            guard written == total else {
                throw MP4Error(.io, "\(source.name) delivered \(written) of \(total) bytes; the output was discarded")
            }
            if options.verifies {
                verified = try await verify(input: source, opened: view.inputFile, output: try FileSource(path: writer.temporaryPath), limits: options.limits)
            }
            try writer.commit()
        } catch {
            writer.abort()
            throw error
        }
        return Result(plan: view.plan, wroteOutput: true, verifiedSampleCount: verified)
    }

    /// The owner of an in-place replacement of `input`, as an in-place insertion has one:
    /// another process's in-place run on the file is waited for, never raced, and what it left
    /// is recovered first. nil for a file this user cannot open for writing (replaced through
    /// its directory), which goes without the lock.
    private static func inPlaceOwner(of input: String) throws -> FileOwnerLock? {
        var owner: FileOwnerLock?
        do {
            guard let taken = try FileOwnerLock.take(input, waitingUpTo: InPlaceFaststart.ownerWait) else {
                throw MP4Error(.io, "another process is reading or rewriting \(input) (it held the file for \(Int(InPlaceFaststart.ownerWait)) s); nothing was changed: try again when it has ended")
            }
            owner = taken
        } catch let error as MP4Error where error.kind != .io || !error.message.hasPrefix("cannot open") {
            throw error
        } catch {}
        _ = try owner.map { try InPlaceFaststart.recover($0, path: input) }
        return owner
    }

    public static func rewrite(input: String, output requestedOutput: String, options: Options = Options()) async throws -> Result {
        let output = try destination(requestedOutput)
        let inputStatus = Platform.status(path: input)
        if let inputStatus, let outputStatus = Platform.status(path: output),
           inputStatus.device == outputStatus.device, inputStatus.inode == outputStatus.inode, !options.inPlace {
            throw MP4Error(.unsupported, "\(output) is the input itself; use --in-place to rewrite a file in place")
        }
        if options.inPlace && requestedOutput != input {
            throw MP4Error(.unsupported, "an in-place rewrite writes to its input, not to \(requestedOutput)")
        }
        try refuseHardLinks(output, named: requestedOutput)
        let owner = options.inPlace ? try inPlaceOwner(of: input) : nil
        defer { owner?.release() }
        let (source, file, plan) = try await Self.opened(input: input, options: options)
        if plan.verdict == .rewrite && !options.inPlace && !options.dropsPadding && options.failsAfterBytes == nil && options.clones,
           let (cloned, verified) = try await rewriteByCloning(input: input, source: source, file: file, output: output, options: options) {
            return Result(plan: plan, wroteOutput: true, verifiedSampleCount: verified, clonedLayout: cloned)
        }
        if plan.verdict != .rewrite && options.inPlace {
            return Result(plan: plan, wroteOutput: false, verifiedSampleCount: nil)
        }
        let pieces = plan.outputPieces
        let total = pieces.reduce(0) { $0 + $1.count }

        let inputFD = try Platform.openForReading(input)
        defer { Platform.closeFile(inputFD) }
        let before = try Platform.status(inputFD, path: input)
        guard before.size == plan.inputSize else {
            throw MP4Error(.io, "\(input) changed while it was being planned (\(plan.inputSize) → \(before.size) bytes)")
        }
        AtomicFileWriter.removeStaleTemporaries(beside: output)
        // Written unchanged (already faststart, or not rewritable): a clone of the whole file
        // where the filesystem shares blocks (APFS `fclonefileat`, XFS/Btrfs `FICLONE`).
        let clone = plan.verdict != .rewrite && options.clones && options.failsAfterBytes == nil
            ? AtomicFileWriter.cloning(inputFD, destination: output, permissions: before.permissions & 0o777) : nil
        let writer = try clone ?? AtomicFileWriter(destination: output, permissions: before.permissions & 0o777)
        var verified: Int?
        do {
            let outputFD = try writer.fd()
            try writer.setSize(total)
            var written: UInt64 = 0
            var progress = WriteProgress(total: total, options: options, path: writer.temporaryPath)
            var buffer: [UInt8] = []  // allocated only if the kernel cannot copy
            func advance(_ done: UInt64) throws { try progress.advance(to: done) }
            for piece in clone == nil ? pieces : [] {
                switch piece {
                case .bytes(let bytes):
                    try writer.write(bytes, at: written)
                    written += UInt64(bytes.count)
                    try advance(written)
                case .copy(let range):
                    let start = written
                    try Platform.copy(inputFD, range, to: outputFD, at: start, buffer: &buffer, names: (input, writer.temporaryPath)) { done in
                        try advance(start + done)
                    }
                    written += range.upperBound - range.lowerBound
                }
            }
            let after = try Platform.status(inputFD, path: input)
            if after != before {
                throw MP4Error(.io, "\(input) was modified during the rewrite; the output was discarded")
            }
            // Verified before it replaces anything, so a failed check leaves no output.
            if options.verifies {
                verified = try await verify(input: input, output: writer.temporaryPath, limits: options.limits)
            }
            try writer.commit()
        } catch {
            writer.abort()
            throw error
        }
        return Result(plan: plan, wroteOutput: true, verifiedSampleCount: verified, clonedWholeFile: clone != nil)
    }

    /// Progress every 64 MiB (and at the end) for both rewrites, and the tests' simulated full
    /// disk.
    struct WriteProgress {
        let total: UInt64
        let options: Options
        let path: String
        var reported: UInt64 = 0
        var reportedAt = ContinuousClock.now

        /// Reports every 64 MiB or half second, whichever comes first (a source read over the
        /// network at 512 KB/s reaches 64 MiB after two minutes), and at the end.
        mutating func advance(to done: UInt64) throws {
            if let limit = options.failsAfterBytes, done >= limit {
                throw MP4Error(.io, "write to \(path) failed: No space left on device (the disk is full) [simulated]")
            }
            guard options.progress != nil else { return }
            let now = ContinuousClock.now
            if done - reported >= 64 << 20 || done == total || (done > reported && now - reportedAt >= .milliseconds(500)) {
                (reported, reportedAt) = (done, now)
                options.progress?(done, total)
            }
        }
    }

    /// Checks that `output` is faststart and that every sample of every track holds the same
    /// bytes as in `input`. Returns the number of samples compared.
    public static func verify(input: String, output: String, limits: ParseLimits = .default) async throws -> Int {
        try await verify(input: try FileSource(path: input), output: try FileSource(path: output), limits: limits)
    }

    /// ``verify(input:output:limits:)`` over any two sources.
    public static func verify(input a: any ByteSource, output b: any ByteSource, limits: ParseLimits = .default) async throws -> Int {
        try await verify(input: a, opened: nil, output: b, limits: limits)
    }

    /// The verification, reusing the input's opened file when there is one. The input's
    /// chunks are read in file order, neighbours (gaps up to 64 KiB) joined into reads of up to
    /// 4 MiB: over HTTP, a verification costs a few range requests, not one per chunk.
    static func verify(input a: any ByteSource, opened: MP4File?, output b: any ByteSource, limits: ParseLimits) async throws -> Int {
        let output = b.name
        func failure(_ message: String, offset: UInt64? = nil) -> MP4Error {
            MP4Error(.internalError, "verification failed (a bug in the rewrite; the output was not kept): " + message, offset: offset)
        }
        let fileA: MP4File
        if let opened { fileA = opened } else { fileA = try await MP4File.open(a, options: MP4File.Options(limits: limits, facts: .structure)) }
        let fileB = try await MP4File.open(b, options: MP4File.Options(limits: limits, facts: .structure))
        if fileB.layout.moviePlacement == .afterMediaData {
            throw failure("\(output) is not faststart")
        }
        let tracksA = try await SeekPlanner.index(fileA, from: a, limits: limits).tracks
        let tracksB = try await SeekPlanner.index(fileB, from: b, limits: limits).tracks
        guard tracksA.count == tracksB.count else {
            throw failure("\(tracksA.count) tracks in the input, \(tracksB.count) in the output")
        }
        // Every chunk of every track, as (input span, output span), in input order.
        var pairs: [(a: Range<UInt64>, b: Range<UInt64>, track: UInt32)] = []
        var compared = 0
        for (ta, tb) in zip(tracksA, tracksB) {
            guard ta.samples.sampleCount == tb.samples.sampleCount else {
                throw failure("track \(ta.track.trackID) has \(ta.samples.sampleCount) samples in the input, \(tb.samples.sampleCount) in the output")
            }
            var spansA: [Range<UInt64>] = [], spansB: [Range<UInt64>] = []
            ta.samples.forEachChunkSpan(in: 0..<ta.samples.sampleCount) { span, _ in spansA.append(span) }
            tb.samples.forEachChunkSpan(in: 0..<tb.samples.sampleCount) { span, _ in spansB.append(span) }
            guard spansA.map(\.count) == spansB.map(\.count) else {
                throw failure("track \(ta.track.trackID) chunks differ in size")
            }
            for (ra, rb) in zip(spansA, spansB) { pairs.append((ra, rb, ta.track.trackID)) }
            compared += ta.samples.sampleCount
        }
        pairs.sort { $0.a.lowerBound < $1.a.lowerBound }
        // Samples past the input's end (a cut upload, copied unchanged: fragmented or already
        // faststart) have no bytes to compare: the input is what is wrong, not the rewrite.
        let inputLength = fileA.layout.fileSize
        if let past = pairs.first(where: { $0.a.upperBound > inputLength }) {
            throw MP4Error(.malformed, "track \(past.track): samples at [\(past.a.lowerBound), \(past.a.upperBound)) run past the end of the input (\(inputLength) bytes): the file is truncated, so its samples cannot be verified; repair or re-upload it", offset: past.a.lowerBound)
        }
        let maximumRead: UInt64 = 4 << 20, maximumGap: UInt64 = 64 << 10
        var i = 0
        while i < pairs.count {
            let start = pairs[i].a.lowerBound
            var end = pairs[i].a.upperBound
            var j = i + 1
            while j < pairs.count, pairs[j].a.lowerBound <= end + maximumGap, max(end, pairs[j].a.upperBound) - start <= maximumRead {
                end = max(end, pairs[j].a.upperBound)
                j += 1
            }
            if UInt64(pairs[i].a.count) > maximumRead {
                // One large chunk: compared a step at a time.
                let (ra, rb) = (pairs[i].a, pairs[i].b)
                var offset: UInt64 = 0
                while offset < UInt64(ra.count) {
                    let step = min(UInt64(ra.count) - offset, maximumRead)
                    if try await a.read((ra.lowerBound + offset)..<(ra.lowerBound + offset + step)) != b.read((rb.lowerBound + offset)..<(rb.lowerBound + offset + step)) {
                        throw failure("track \(pairs[i].track) bytes at \(rb.lowerBound + offset) differ from the input's at \(ra.lowerBound + offset)", offset: rb.lowerBound + offset)
                    }
                    offset += step
                }
            } else {
                let bytesA = try await a.read(start..<end)
                for pair in pairs[i..<j] {
                    let lower = Int(pair.a.lowerBound - start), upper = Int(pair.a.upperBound - start)
                    let bytesB = try await b.read(pair.b)
                    guard upper <= bytesA.count, bytesA[lower..<upper].elementsEqual(bytesB) else {
                        throw failure("track \(pair.track) bytes at \(pair.b.lowerBound) differ from the input's at \(pair.a.lowerBound)", offset: pair.b.lowerBound)
                    }
                }
            }
            i = j
        }
        return compared
    }
}
