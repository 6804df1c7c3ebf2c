import MP4Core
import MP4Report

/// `mp4probe seek FILE TIME [--duration D] [--align previous|next|exact] [--json]`.
enum SeekCommand: Command {
    static let spec = CommandSpec(
        name: "seek",
        summary: "map a time (and duration) to the keyframe and the byte ranges a player needs",
        usage: ["mp4probe seek FILE TIME [--duration D] [--align previous|next|exact] [--json [--compact]]"],
        description: """
        Maps TIME (seconds, or hh:mm:ss.mmm) to what a player needs to show FILE from TIME to
        TIME+D: the sync sample to decode from (on the video track, else the main audio track) and
        its presentation time; per track the first and last sample needed; where reading must start
        and end; and the byte ranges (inclusive, as in an HTTP Range header) holding exactly those
        samples. Edit lists and composition offsets are applied. A window that runs past the end
        of the movie is clamped to it. In a fragmented file with sidx or mfra only the fragments
        around TIME are read (see docs/seeking.md).
        """,
        options: [
            .value("duration", "D", "window length (default 0: just the frame at TIME)"),
            .value("align", "MODE", "previous (default): last sync sample at or before TIME; next: first at\nor after; exact: the sample shown at TIME, no sync alignment"),
        ] + CommandTable.output, groups: [CommandTable.source, CommandTable.limits], exitCodes: CommandTable.readingExits)

    static func run(_ arguments: [String], output: some TextOutput, errors: some TextOutput) async throws -> Int32 {
        let scanner = try ArgumentScanner(arguments, for: spec)
        guard scanner.positionals.count == 2 else {
            throw ArgumentScanner.UsageError(description: "expected FILE and TIME")
        }
        let location = scanner.positionals[0]
        guard let time = parseTime(scanner.positionals[1]) else {
            throw ArgumentScanner.UsageError(description: "TIME must be seconds (12.5) or hh:mm:ss.mmm, not '\(scanner.positionals[1])'")
        }
        var duration = 0.0
        if let text = scanner.value("duration") {
            guard let d = parseTime(text) else { throw ArgumentScanner.UsageError(description: "--duration must be seconds or hh:mm:ss.mmm, not '\(text)'") }
            duration = d
        }
        let alignment: SeekPlan.Alignment
        switch scanner.value("align") ?? "previous" {
        case "previous": alignment = .previousSync
        case "next": alignment = .nextSync
        case "exact": alignment = .exactSample
        case let other: throw ArgumentScanner.UsageError(description: "--align must be previous, next or exact, not '\(other)'")
        }
        let (file, source, limits) = try await MP4Probe.openWithSource(location, scanner, loadsAllBoxes: false)
        let plan: SeekPlan
        do {
            plan = try await SeekPlanner.plan(file, from: source, at: time, duration: duration, alignment: alignment, limits: limits)
        } catch let error as MP4Error {
            throw error.about(location)
        }
        if scanner.flag("json") {
            let json: JSONValue = .object([
                ("schemaVersion", .int(1)),
                ("file", .object([("name", .string(file.name)), ("size", .uint(file.layout.fileSize))])),
                ("requestedTime", .double(plan.requestedTime)), ("windowEnd", .double(plan.windowEnd)),
                ("movieEnd", .double(plan.movieEnd)), ("windowClampedToMovieEnd", .bool(plan.windowClampedToMovieEnd)),
                ("alignment", .string(plan.alignment.rawValue)),
                ("keyframeTrackId", .uint(UInt64(plan.keyframeTrackID))), ("keyframeSampleIndex", .int(Int64(plan.keyframeSampleIndex))),
                ("keyframeTime", .double(plan.keyframeTime)),
                ("startOffset", .uint(plan.startOffset)), ("endOffset", .uint(plan.endOffset)),
                ("byteCount", .uint(plan.byteCount)),
                ("sampleIndicesCountFromFileStart", .bool(plan.sampleIndicesCountFromFileStart)),
                ("ranges", .array(plan.ranges.map { .array([.uint($0.lowerBound), .uint($0.upperBound)]) })),
                ("tracks", .array(plan.tracks.map { t in .object([
                    ("trackId", .uint(UInt64(t.trackID))), ("firstSampleIndex", .int(Int64(t.firstSampleIndex))), ("lastSampleIndex", .int(Int64(t.lastSampleIndex))),
                    ("firstSampleTime", .double(t.firstSampleTime)), ("startOffset", .uint(t.startOffset)), ("endOffset", .uint(t.endOffset)), ("byteCount", .uint(t.byteCount)),
                    ("startReason", .string(t.startReason.rawValue)), ("prerollSampleCount", .int(Int64(t.prerollSampleCount))), ("prerollSource", .string(t.prerollSource)), ("endReason", .string(t.endReason.rawValue)),
                ]) })),
            ])
            output.write(json.rendered(pretty: !scanner.flag("compact")) + "\n")
        } else {
            var text = "seek \(Format.clock(plan.requestedTime)) in \(file.name)\n"
            text += "keyframe:  track \(plan.keyframeTrackID) sample \(plan.keyframeSampleIndex) at \(Format.clock(plan.keyframeTime)) (\(Format.fixed(plan.keyframeTime, 3)) s)\n"
            text += "window:    \(Format.clock(plan.requestedTime)) to \(Format.clock(plan.windowEnd))" + (plan.windowClampedToMovieEnd ? " (clamped to the end of the movie; \(Format.clock(plan.requestedTime + duration)) was asked)" : "") + "\n"
            text += "read:      \(Format.byteRange(plan.startOffset..<plan.endOffset)); the samples need \(Format.bytes(plan.byteCount)) in \(Format.count(plan.ranges.count, "range"))\n"
            if !plan.sampleIndicesCountFromFileStart {
                text += "           (planned from the fragment index: sample numbers count from the first fragment read)\n"
            }
            for t in plan.tracks {
                text += "  track \(t.trackID): samples \(t.firstSampleIndex)...\(t.lastSampleIndex) from \(Format.fixed(t.firstSampleTime, 3)) s (\(Self.describe(t.startReason, preroll: t.prerollSampleCount)); to \(Self.describe(t.endReason))), \(Format.byteRange(t.startOffset..<t.endOffset))\n"
            }
            // As an HTTP Range header value: what curl -r and players send.
            text += "ranges:    " + Format.rangeHeader(plan.ranges.prefix(8)) + (plan.ranges.count > 8 ? " ... (\(plan.ranges.count - 8) more; --json lists all)" : "") + "\n"
            output.write(text)
        }
        await MP4Probe.reportStatistics(source, file, scanner, errors: errors)
        return ExitCode.success.rawValue
    }

    /// Seconds (`12.5`) or `[[hh:]mm:]ss[.mmm]`.
    static func parseTime(_ text: String) -> Double? {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard (1...3).contains(parts.count) else { return nil }
        var total = 0.0
        for (i, part) in parts.enumerated() {
            guard let value = Double(part), value.isFinite, value >= 0 else { return nil }
            if i < parts.count - 1 && (value != value.rounded() || (i > 0 && value >= 60)) { return nil }
            total = total * 60 + value
        }
        return total
    }
}

extension SeekCommand {
    /// Why a track's range starts where it does, in words.
    static func describe(_ reason: SeekPlan.StartReason, preroll: Int) -> String {
        switch reason {
        case .keyframe: return "keyframe"
        case .overlap: return "the sample playing at the keyframe time"
        case .preroll: return "pre-roll of \(Format.count(preroll, "sample"))"
        case .decodeAlignment: return "the sample decoded at the keyframe's decode time"
        case .trackStart: return "the track's first sample"
        }
    }

    /// Why a track's range ends where it does, in words.
    static func describe(_ reason: SeekPlan.EndReason) -> String {
        switch reason {
        case .window: return "the window end"
        case .nextSample: return "one sample past the window, for stream parsers"
        case .trackEnd: return "the track's end"
        }
    }
}
