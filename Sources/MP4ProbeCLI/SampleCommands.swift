import MP4Core

/// `mp4probe samples FILE [--track N] [--json]`: every sample with the facts
/// `ffprobe -show_packets` gives (index, dts, pts, duration, offset, size, sync, chunk).
enum SamplesCommand {
    static func run(_ arguments: [String], output: some TextOutput, errors: some TextOutput) async throws -> Int32 {
        let scanner = try ArgumentScanner(arguments, for: CommandTable.samples)
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

/// `mp4probe seek FILE TIME [--duration D] [--align previous|next|exact] [--json]`.
enum SeekCommand {
    static func run(_ arguments: [String], output: some TextOutput, errors: some TextOutput) async throws -> Int32 {
        let scanner = try ArgumentScanner(arguments, for: CommandTable.seek)
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
