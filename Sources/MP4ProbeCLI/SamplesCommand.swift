import MP4Core
import MP4Report

/// `mp4probe samples FILE [--track N] [--json]`: every sample with the facts
/// `ffprobe -show_packets` gives (index, dts, pts, duration, offset, size, sync, chunk).
enum SamplesCommand: Command {
    static let spec = CommandSpec(
        name: "samples",
        summary: "list every sample: dts, pts, duration, offset, size, sync, chunk",
        usage: ["mp4probe samples FILE [--track N] [--range FIRST-LAST] [--limit N] [--json [--compact]]"],
        description: """
        Lists every sample of every track (or of track N) in decode order, from the sample tables:
        index, dts and pts in media time-scale units (before the edit list), duration, byte offset,
        size, sync flag (K), chunk index, and the presentation time in seconds after the edit list.
        These are the facts of `ffprobe -show_packets`; ffprobe's timestamps equal ours plus the
        track's `ffprobeShift` (the first edit's delay minus its media_time). Fragmented files are
        listed from their moof/trun boxes. Output is streamed; a listing of more than
        --max-samples samples (default 50,000,000) without --range or --limit is refused (exit 5).
        """,
        options: [
            .value("track", "N", "only track N (a track id, as info shows)"),
            .value("range", "FIRST-LAST", "sample indexes, inclusive (100- runs to the end)"),
            .value("limit", "N", "at most N samples per track"),
        ] + CommandTable.output, groups: [CommandTable.source, CommandTable.limits], exitCodes: CommandTable.readingExits)

    static func run(_ arguments: [String], output: some TextOutput, errors: some TextOutput) async throws -> Int32 {
        let scanner = try ArgumentScanner(arguments, for: spec)
        let location = try scanner.singleFile()
        let (file, source, limits) = try await MP4Probe.openWithSource(location, scanner, loadsAllBoxes: false)
        let planner = try await SeekPlanner.index(file, from: source, limits: limits)
        var tracks = planner.tracks
        if let wanted = try scanner.integer("track") {
            tracks = tracks.filter { Int($0.track.trackID) == wanted }
            if tracks.isEmpty {
                let ids = planner.tracks.map { String($0.track.trackID) }
                throw MP4Error(.invalidRequest, "\(location) has no track \(wanted)" + (ids.isEmpty ? " (it has no tracks with samples)" : "; its tracks are \(ids.joined(separator: ", "))"))
            }
        }
        // Which samples: --range FIRST-LAST (indexes, inclusive), then at most --limit.
        var first = 0, last = Int.max
        if let text = scanner.value("range") {
            let parts = text.split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
            guard parts.count == 2, let a = Int(parts[0]), a >= 0, parts[1].isEmpty || Int(parts[1]) != nil else {
                throw ArgumentScanner.UsageError(description: "--range must be FIRST-LAST sample indexes (0-99, or 100- to the end), not '\(text)'")
            }
            first = a
            last = parts[1].isEmpty ? Int.max : (Int(parts[1]) ?? Int.max)
            guard last >= first else { throw ArgumentScanner.UsageError(description: "--range \(text): LAST is before FIRST") }
        }
        let limit = try scanner.integer("limit") ?? Int.max
        guard limit >= 0 else { throw ArgumentScanner.UsageError(description: "--limit must be 0 or more") }
        func selection(_ indexed: SeekPlanner.IndexedTrack) -> Range<Int> {
            let count = indexed.samples.sampleCount
            let lower = min(first, count)
            let upper = min(count, last == Int.max ? count : last + 1)
            return lower..<(lower + min(upper - lower, limit))
        }
        // Unbounded output from a small file (a table claiming billions of samples) is a
        // resource limit, not an allocation or hours of printing.
        let listed = tracks.reduce(0) { $0 + selection($1).count }
        if listed > limits.maxSamplesPerQuery && scanner.value("range") == nil && scanner.value("limit") == nil {
            throw MP4Error(.limitExceeded, "the listing would have \(Format.grouped(UInt64(listed))) samples, more than \(Format.grouped(UInt64(limits.maxSamplesPerQuery))); list a part with --limit N or --range FIRST-LAST", limit: .maxSamplesPerQuery).about(location)
        }
        if scanner.flag("json") {
            // Streamed: one sample's JSON at a time, whatever the count.
            let json: JSONValue = .object([
                ("schemaVersion", .int(1)),
                ("file", .object([("name", .string(file.name)), ("size", .uint(file.layout.fileSize))])),
                ("tracks", .array(tracks.enumerated().map { i, indexed in
                    .object([
                        ("trackId", .uint(UInt64(indexed.track.trackID))), ("kind", .string(indexed.track.kind.rawValue)),
                        ("timescale", .uint(UInt64(indexed.timeline.mediaTimescale))), ("sampleCount", .int(Int64(indexed.samples.sampleCount))),
                        ("ffprobeShift", .int(indexed.timeline.ffprobeShift)), ("samples", .streamedArray(i)),
                    ])
                })),
                ("findings", .array(planner.findings.map(InfoReport.findingJSON))),
            ])
            JSONValue.stream(json, pretty: !scanner.flag("compact"), to: output) { i, emit in
                let indexed = tracks[i]
                indexed.samples.forEachSample(in: selection(indexed)) { s in
                    emit(.object([
                        ("index", .int(Int64(s.index))), ("dts", .int(s.decodeTime)), ("pts", .int(s.compositionTime)),
                        ("duration", .int(s.duration)), ("offset", .uint(s.byteOffset)), ("size", .uint(UInt64(s.byteCount))),
                        ("sync", .bool(s.isSync)), ("chunk", .int(Int64(s.chunkIndex))),
                        ("presentationTime", .double(indexed.timeline.presentationTime(ofMediaTime: s.compositionTime))),
                    ]))
                    return true
                }
            }
            output.write("\n")
            await MP4Probe.reportStatistics(source, file, scanner, errors: errors)
            return ExitCode.success.rawValue
        }
        for indexed in tracks {
            output.write("# track \(indexed.track.trackID) (\(indexed.track.kind.rawValue)), timescale \(indexed.timeline.mediaTimescale), \(indexed.samples.sampleCount) samples; times in media units, ptsTime after the edit list\n")
            output.write("index\tdts\tpts\tduration\toffset\tsize\tsync\tchunk\tptsTime\n")
            var text = ""
            indexed.samples.forEachSample(in: selection(indexed)) { s in
                text += "\(s.index)\t\(s.decodeTime)\t\(s.compositionTime)\t\(s.duration)\t\(s.byteOffset)\t\(s.byteCount)\t\(s.isSync ? "K" : "_")\t\(s.chunkIndex)\t\(Format.fixed(indexed.timeline.presentationTime(ofMediaTime: s.compositionTime), 6))\n"
                if text.utf8.count > 1 << 16 { output.write(text); text = "" }
                return true
            }
            output.write(text)
        }
        for finding in planner.findings { errors.write("mp4probe: \(finding)\n") }
        await MP4Probe.reportStatistics(source, file, scanner, errors: errors)
        return ExitCode.success.rawValue
    }
}
