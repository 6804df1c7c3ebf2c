import Foundation
import MP4Core
import MP4IO
import MP4Report

/// `mp4probe faststart IN OUT` / `mp4probe faststart --in-place FILE`: moves `moov` in front
/// of the media (see docs/faststart.md).
enum FaststartCommand: Command {
    static let spec = CommandSpec(
        name: "faststart",
        summary: "move moov in front of the media, safely (temp file, fsync, rename)",
        usage: ["mp4probe faststart IN OUT [options]", "mp4probe faststart --in-place FILE [options]", "mp4probe faststart --dry-run IN [--json]", "mp4probe faststart URL OUT [options]"],
        description: """
        Moves moov in front of the media so that progressive players can start before the whole
        file has arrived. Every chunk offset is relocated (stco is promoted to co64 when an offset
        passes 4 GiB; saio and iloc offsets are relocated too); every other box is kept byte for
        byte. IN OUT: the output is written to a temporary file beside OUT, flushed to disk and
        renamed into place: on any error or interruption nothing appears at OUT and IN is
        unchanged. Where IN and OUT share an XFS or Btrfs filesystem, OUT shares IN's blocks
        (reflink) instead of copying them. --in-place on ext4 or XFS inserts space at the start of
        FILE (no media copied, a journal beside the file: an interrupted run is finished or undone
        by the next mp4probe command that opens it); elsewhere, or with --atomic, it writes a copy
        and renames it over FILE. A symbolic link is followed: the file it points to is rewritten
        and the link kept. The copy path refuses a file with several hard links (the rewrite would
        split them). A file that is already faststart, or fragmented, is copied unchanged to OUT
        (left alone with --in-place). Files that cannot be rewritten safely (cmov, offsets outside
        every box, a truncated input, a top-level meta) are refused with exit code 6. IN and OUT
        are files: '-' (standard input or output) is refused. IN may be an http(s) URL (or be read
        through --cache DIR): it is downloaded in faststart order, moov first, through the same
        plan, to the local OUT.
        """,
        options: [
            .flag("in-place", "rewrite FILE itself: on ext4/XFS by inserting space at its start\n(O(moov), no copy, journaled); elsewhere by a copy renamed into place"),
            .flag("atomic", "with --in-place: always the copy renamed into place (readers that\nhave the file open keep the old version; needs the file's size free)"),
            .flag("dry-run", "print the plan (new layout, offsets relocated, co64 promotion, size)\nwithout writing anything"),
            .flag("verify", "before replacing anything, re-read the output: it must be faststart\nand every sample's bytes must equal the input's"),
            .flag("drop-free", "drop top-level free/skip padding"),
            .flag("quiet", "no progress line (progress is shown only on a terminal anyway)"),
        ] + CommandTable.output, groups: [CommandTable.source, CommandTable.limits], exitCodes: [.success, .usage, .invalidInput, .ioError, .limitExceeded, .rewriteRefused, .internalError])

    static func run(_ arguments: [String], output: some TextOutput, errors: some TextOutput) async throws -> Int32 {
        let scanner = try ArgumentScanner(arguments, for: spec)
        let inPlace = scanner.flag("in-place")
        let paths = scanner.positionals
        guard inPlace ? paths.count == 1 : (paths.count == 2 || (paths.count == 1 && scanner.flag("dry-run"))) else {
            throw ArgumentScanner.UsageError(description: inPlace ? "--in-place takes exactly one FILE" : "expected IN and OUT (or --in-place FILE)")
        }
        let input = paths[0]
        let destination = inPlace ? input : (paths.count > 1 ? paths[1] : input)
        // A URL (or --cache) input is read through its faststart view: moov first, then the
        // media in output order, to a local OUT.
        let remote = MP4Probe.isURL(input) || scanner.value("cache") != nil
        if remote && inPlace { throw ArgumentScanner.UsageError(description: "--in-place rewrites a local file; '\(input)' is read through a URL or a cache") }
        if paths.count > 1 && MP4Probe.isURL(paths[1]) {
            throw ArgumentScanner.UsageError(description: "OUT must be a local file, not the URL '\(paths[1])'")
        }
        for path in paths where path == "-" {
            throw ArgumentScanner.UsageError(description: "'-' (standard input or output) is not supported: the rewrite reads the input twice and writes the output atomically beside its final name; give file names")
        }
        let limits = try MP4Probe.parseLimits(scanner)
        let showsProgress = !scanner.flag("quiet") && !scanner.flag("json") && isatty(2) == 1
        let clock = ContinuousClock(), started = clock.now
        var options = FaststartRewriter.Options(inPlace: inPlace, dropsPadding: scanner.flag("drop-free"), verifies: scanner.flag("verify"), limits: limits)
        if showsProgress {
            // The line fetch --all draws: bytes written of the output, rate, time left.
            options.progress = { done, total in
                StandardStream.error.write(ProgressLine.line(total: total, done: 0, fetched: done, seconds: ProgressLine.seconds(clock.now - started)) + (done == total ? "\n" : ""))
            }
        }
        do {
            if remote {
                let source = try await MP4Probe.openCachedSource(input, try MP4Probe.sourceOptions(scanner))
                if scanner.flag("dry-run") {
                    let view = try await FaststartView.make(source, limits: limits, options: FaststartPlan.Options(dropsPadding: options.dropsPadding))
                    write(plan: view.plan, input: input, output: paths.count > 1 ? destination : nil, dryRun: true, verified: nil, json: scanner, to: output)
                } else {
                    let result = try await FaststartRewriter.rewrite(source: source, output: destination, options: options)
                    write(plan: result.plan, input: input, output: destination, dryRun: false, verified: result.verifiedSampleCount, json: scanner, to: output)
                }
                await MP4Probe.reportStatistics(source, nil, scanner, errors: errors)
                return ExitCode.success.rawValue
            }
            if scanner.flag("dry-run") {
                let plan = try await FaststartRewriter.plan(input: input, options: options)
                write(plan: plan, input: input, output: paths.count > 1 || inPlace ? destination : nil, dryRun: true, verified: nil, json: scanner, to: output)
                return ExitCode.success.rawValue
            }
            try MP4Probe.recoverInterruptedFaststart(input)
            var fallback: String?
            if inPlace && !scanner.flag("atomic") && !options.verifies && !options.dropsPadding {
                switch try await InPlaceFaststart.run(path: input, limits: limits) {
                case .rewritten(let insertion):
                    write(insertion: insertion, input: input, output: input, method: "insert", verified: nil, json: scanner, to: output)
                    return ExitCode.success.rawValue
                case .nothingToDo:
                    break
                case .unavailable(let reason):
                    fallback = reason
                }
            }
            var result = try await FaststartRewriter.rewrite(input: input, output: destination, options: options)
            if let cloned = result.clonedLayout {
                write(insertion: cloned, input: input, output: destination, method: "clone", verified: result.verifiedSampleCount, json: scanner, to: output)
                return ExitCode.success.rawValue
            }
            if let fallback, result.plan.verdict == .rewrite { result.plan.notes.append("rewritten by copying, not in place: \(fallback)") }
            write(plan: result.plan, input: input, output: result.wroteOutput ? destination : nil, dryRun: false, verified: result.verifiedSampleCount, json: scanner, to: output, method: result.clonedWholeFile ? "clone" : "copy")
            return ExitCode.success.rawValue
        } catch let error as MP4Error {
            let named = error.about(input)
            let refused = error.kind == .unsupported
            if scanner.flag("json") { output.write(ErrorReport.json(named).rendered(pretty: !scanner.flag("compact")) + "\n") }
            errors.write(ErrorReport.text(named, heading: refused ? "refused: " : nil) + "  nothing was written; \(input) is unchanged\n")
            return refused ? ExitCode.rewriteRefused.rawValue : ExitCode.for(error).rawValue
        }
    }

    /// What happens to a file that needs no rewrite.
    static func unchanged(_ output: String?, dryRun: Bool, method: String = "copy") -> String {
        switch (output, dryRun) {
        case (let output?, false) where method == "clone": return "cloned unchanged to \(output) (its blocks shared, not copied)"
        case (let output?, false): return "copied unchanged to \(output)"
        case (let output?, true): return "it would be copied unchanged to \(output)"
        case (nil, true): return "nothing to do"
        case (nil, false): return "left unchanged"
        }
    }

    /// What a run did, whichever way it wrote: the copy's plan, or the insertion layout of an
    /// in-place run (`insert`) or a clone sharing the input's blocks (`clone`).
    struct Report {
        var verdict: FaststartPlan.Verdict
        var inputSize: UInt64
        var outputSize: UInt64
        var movieSize: (before: UInt64, after: UInt64)
        var relocatedOffsetCount: Int
        var promotedTableCount: Int
        var boxes: [FaststartPlan.PlacedBox]
        var notes: [String]
        /// How the media got there ("in place: ..."), for a written insertion layout.
        var how: String?
        /// The bytes inserted at the start (insertion layouts only).
        var insertedBytes: UInt64?

        init(_ plan: FaststartPlan) {
            (verdict, inputSize, outputSize, movieSize) = (plan.verdict, plan.inputSize, plan.verdict == .rewrite ? plan.outputSize : plan.inputSize, plan.movieSize)
            (relocatedOffsetCount, promotedTableCount, boxes, notes) = (plan.relocatedOffsetCount, plan.promotedTableCount, plan.boxes, plan.notes)
        }

        init(_ insertion: FaststartInsertion, method: String, input: String) {
            (verdict, inputSize, outputSize, movieSize) = (.rewrite, insertion.inputSize, insertion.outputSize, insertion.movieSize)
            (relocatedOffsetCount, promotedTableCount, boxes, notes) = (insertion.relocatedOffsetCount, insertion.promotedTableCount, insertion.boxes, insertion.notes)
            insertedBytes = insertion.insertedLength
            how = method == "clone" ? "the media's blocks shared with \(input) (reflink), not copied"
                : "in place: \(Format.grouped(insertion.insertedLength)) bytes inserted at the start, no media copied"
        }
    }

    static func write(insertion: FaststartInsertion, input: String, output: String, method: String, verified: Int?, json scanner: ArgumentScanner, to stream: some TextOutput) {
        write(Report(insertion, method: method, input: input), input: input, output: output, dryRun: false, verified: verified, json: scanner, to: stream, method: method)
    }

    static func write(plan: FaststartPlan, input: String, output: String?, dryRun: Bool, verified: Int?, json scanner: ArgumentScanner, to stream: some TextOutput, method: String = "copy") {
        write(Report(plan), input: input, output: output, dryRun: dryRun, verified: verified, json: scanner, to: stream, method: method)
    }

    static func write(_ report: Report, input: String, output: String?, dryRun: Bool, verified: Int?, json scanner: ArgumentScanner, to stream: some TextOutput, method: String) {
        if scanner.flag("json") {
            var fields: [(String, JSONValue)] = [
                ("schemaVersion", .int(1)),
                ("input", .string(input)),
                ("output", output.map(JSONValue.string) ?? .null),
                ("dryRun", .bool(dryRun)),
                ("method", dryRun ? .null : .string(method)),
                ("verdict", .string(report.verdict.rawValue)),
                ("inputSize", .uint(report.inputSize)),
                ("outputSize", .uint(report.outputSize)),
                ("moovSizeBefore", .uint(report.movieSize.before)),
                ("moovSizeAfter", .uint(report.movieSize.after)),
                ("relocatedOffsets", .int(Int64(report.relocatedOffsetCount))),
                ("promotedToCo64", .int(Int64(report.promotedTableCount))),
            ]
            if let inserted = report.insertedBytes { fields.append(("insertedBytes", .uint(inserted))) }
            fields += [
                ("layout", .array(report.boxes.map { .object([("type", .string($0.type.description)), ("offset", .uint($0.outputOffset)), ("size", .uint($0.size)), ("inputOffset", .uint($0.inputOffset))]) })),
                ("verifiedSamples", verified.map { .int(Int64($0)) } ?? .null),
                ("notes", .array(report.notes.map(JSONValue.string))),
            ]
            stream.write(JSONValue.object(fields).rendered(pretty: !scanner.flag("compact")) + "\n")
            return
        }
        var text = ""
        switch report.verdict {
        case .alreadyFaststart:
            text += "\(input) is already faststart (moov before the media); " + unchanged(output, dryRun: dryRun, method: method) + "\n"
        case .fragmented:
            text += "\(input) is fragmented (moov at the front, media in fragments); " + unchanged(output, dryRun: dryRun, method: method) + "\n"
        case .rewrite:
            let moov = report.boxes.first { $0.type == .moov }
            text += (dryRun ? "would move" : "moved") + " moov (\(Format.bytes(report.movieSize.before))" + (report.movieSize.after != report.movieSize.before ? " → \(Format.bytes(report.movieSize.after))" : "") + ") from \(Format.grouped(moov?.inputOffset ?? 0)) to \(Format.grouped(moov?.outputOffset ?? 0))" + (report.how.map { ", " + $0 } ?? "") + "\n"
            text += "offsets:   \(Format.grouped(UInt64(report.relocatedOffsetCount))) relocated" + (report.promotedTableCount > 0 ? "; \(Format.count(report.promotedTableCount, "stco table")) promoted to co64 (offsets past 4 GiB)" : "") + "\n"
            text += "layout:    " + report.boxes.map { "\($0.type)@\($0.outputOffset)" }.joined(separator: " ") + "\n"
            text += "size:      \(Format.grouped(report.inputSize)) → \(Format.grouped(report.outputSize)) bytes\n"
            if let output { text += (dryRun ? "would write: " : "wrote:     ") + "\(output)\n" }
        }
        if let verified { text += "verified:  faststart, \(Format.grouped(UInt64(verified))) samples byte-identical to the input\n" }
        for note in report.notes { text += "note:      \(note)\n" }
        stream.write(text)
    }
}
