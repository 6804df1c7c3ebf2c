import MP4Core
import MP4Report

/// `mp4probe info`: the summary of a file, as text for people and as JSON (schema in
/// `docs/json-schema.md`).
enum InfoReport {
    static let schemaVersion = 2

    // MARK: JSON

    static func json(_ file: MP4File) -> JSONValue {
        let layout = file.layout
        return .object([
            ("schemaVersion", .int(Int64(schemaVersion))),
            ("file", .object([("name", .string(file.name)), ("size", .uint(layout.fileSize))])),
            ("kind", .string(file.kind.rawValue)),
            ("brands", .optional(file.fileType) { f in .object([("major", .string(f.majorBrand.description)), ("minorVersion", .uint(UInt64(f.minorVersion))), ("compatible", .array(f.compatibleBrands.map { .string($0.description) }))]) }),
            ("durationSeconds", .optional(file.movie?.durationSeconds, JSONValue.double)),
            ("bitRate", .optional(overallBitRate(file)) { .uint($0) }),
            ("layout", layoutJSON(file)),
            ("tags", tagsJSON(file.movie?.metadata.dictionary ?? [])),
            ("chapters", .array((file.movie?.metadata.chapters ?? []).enumerated().map { index, chapter in
                let chapters = file.movie?.metadata.chapters ?? []
                let end = index + 1 < chapters.count ? chapters[index + 1].startSeconds : file.movie?.durationSeconds
                return .object([("startSeconds", .double(chapter.startSeconds)), ("endSeconds", .optional(end, JSONValue.double)), ("title", .string(chapter.title))])
            })),
            ("chaptersFrom", .optional(file.movie?.metadata.chapterSource) { .string($0.rawValue) }),
            ("tracks", .array((file.movie?.tracks ?? []).map { trackJSON($0, movie: file.movie) })),
            ("findings", .array(file.findings.map(findingJSON))),
            ("reads", .object([("count", .int(Int64(file.statistics.readCount))), ("bytes", .uint(file.statistics.byteCount))])),
        ])
    }

    static func layoutJSON(_ file: MP4File) -> JSONValue {
        let layout = file.layout
        return .object([
            ("moviePlacement", .string(layout.moviePlacement.rawValue)),
            ("isFastStart", .bool(layout.isFastStart)),
            ("isFragmented", .bool(file.isFragmented)),
            ("isTruncated", .bool(layout.isTruncated)),
            ("startupByteCount", .optional(layout.startupByteCount) { .uint($0) }),
            ("movieBox", .optional(layout.movieBox) { .object([("offset", .uint($0.offset)), ("size", .uint($0.size))]) }),
            ("firstMediaDataOffset", .optional(layout.firstMediaDataBox) { .uint($0.offset) }),
            ("mediaDataByteCount", .uint(layout.mediaDataByteCount)),
            ("unparsedTailByteCount", .uint(layout.unparsedTailByteCount)),
            ("boxes", .array(layout.boxes.map(topLevelBoxJSON))),
            ("indexedRanges", .array(layout.indexedRanges.map { .object([("offset", .uint($0.range.lowerBound)), ("size", .uint(UInt64($0.range.count))), ("subsegments", .int(Int64($0.subsegments.count))), ("indexOffset", .uint($0.indexOffset))]) })),
        ])
    }

    static func topLevelBoxJSON(_ box: TopLevelBox) -> JSONValue {
        .object([
            ("type", .string(box.type.description)),
            ("offset", .uint(box.offset)),
            ("size", .uint(box.size)),
            ("headerSize", .int(Int64(box.header.headerSize))),
            ("largeSize", .bool(box.header.usesLargeSize)),
            ("extendsToEnd", .bool(box.header.extendsToEnd)),
            ("truncated", .bool(box.isTruncated)),
        ])
    }

    static func trackJSON(_ track: Track, movie: Movie?) -> JSONValue {
        let entry = track.sampleEntries.first
        return .object([
            ("trackId", .uint(UInt64(track.trackID))),
            ("kind", .string(track.kind.rawValue)),
            ("handlerType", .optional(track.handlerType) { .string($0.description) }),
            ("handlerName", .optional(track.handlerName, JSONValue.string)),
            ("codec", .optional(entry?.codingFormat) { .string($0.description) }),
            ("codecString", .optional(entry?.codecString, JSONValue.string)),
            ("width", .optional(track.width) { .uint(UInt64($0)) }),
            ("height", .optional(track.height) { .uint(UInt64($0)) }),
            ("displayWidth", .optional(track.kind == .video ? track.header?.width : nil, JSONValue.double)),
            ("displayHeight", .optional(track.kind == .video ? track.header?.height : nil, JSONValue.double)),
            ("rotation", .optional(track.kind == .video ? track.header?.rotationDegrees : nil) { .int(Int64($0)) }),
            ("sampleRate", .optional(entry?.effectiveSampleRate, JSONValue.double)),
            ("channelCount", .optional(entry?.effectiveChannelCount) { .uint(UInt64($0)) }),
            // Where they come from when not the sample entry or its configuration: the first
            // frame header (MP3 channels; DTS core rate and channels).
            ("audioFromFrameHeader", .bool(entry?.audioFromFrameHeader ?? false)),
            ("sizeFromParameterSet", .bool(entry?.sizeFromParameterSet ?? false)),
            ("timescale", .optional(track.timescale) { .uint(UInt64($0)) }),
            ("durationSeconds", .optional(track.durationSeconds, JSONValue.double)),
            ("sampleCount", .uint(track.sampleCount)),
            ("factsFromFragments", .bool(track.factsFromFragments)),
            ("syncSampleCount", .optional(track.syncSampleCount) { .int(Int64($0)) }),
            ("chunkCount", .int(Int64(track.chunkCount))),
            ("sampleByteCount", .optional(track.sampleByteCount) { .uint($0) }),
            ("bitRate", .optional(track.bitRate) { .uint($0) }),
            ("language", .optional(track.language, JSONValue.string)),
            ("editList", .optional(track.editList) { list in
                .array(list.entries.map { .object([("segmentDuration", .uint($0.segmentDuration)), ("mediaTime", .int($0.mediaTime)), ("mediaRate", .double($0.mediaRate))]) })
            }),
            ("presentationDurationSeconds", .optional(movie?.presentationDurationSeconds(of: track), JSONValue.double)),
            ("pixelAspectRatio", .optional(entry?.pixelAspectRatio) { .string("\($0.hSpacing):\($0.vSpacing)") }),
            ("colour", .optional(entry?.colour, colourJSON)),
            ("fieldOrder", .optional(entry?.fieldHandling?.fieldOrder, JSONValue.string)),
            ("masteringDisplay", .optional(entry?.masteringDisplay) { box in
                .object([("primaries", .array(box.primaries.map { .double(Double($0) / 50000) })), ("maxLuminance", .double(box.maxLuminanceCandelas)), ("minLuminance", .double(box.minLuminanceCandelas))])
            }),
            ("contentLightLevel", .optional(entry?.contentLightLevel) { .object([("maxContentLightLevel", .uint(UInt64($0.maxContentLightLevel))), ("maxPictureAverageLightLevel", .uint(UInt64($0.maxPictureAverageLightLevel)))]) }),
            ("pictureFormat", .optional(track.pictureFormat) { format in
                .object([("bitDepth", .uint(UInt64(format.bitDepth))), ("chroma", .string(format.chroma.rawValue)), ("interlaced", .optional(format.interlaced, JSONValue.bool))])
            }),
            ("frames", .optional(track.frameStructure()) { frames in
                .object([("framesPerSecond", .optional(frames.framesPerSecond, JSONValue.double)), ("constantFrameRate", .bool(frames.constantFrameRate)),
                         ("maxConsecutiveBFrames", .int(Int64(frames.maxConsecutiveBFrames))), ("openGOP", .bool(frames.openGOP)),
                         ("longestGOPSeconds", .optional(frames.longestGOPSeconds, JSONValue.double)), ("peakGOPBitRate", .optional(frames.peakGOPBitRate) { .uint($0) })])
            }),
            ("codecLevel", .optional(track.codecLevel) { .object([("family", .string($0.family)), ("level", .double($0.level))]) }),
            ("editListShape", .optional(track.editList) { .string($0.shape.rawValue) }),
            ("transfer", .optional(entry?.transfer, JSONValue.string)),
            ("hdr", .optional(entry?.hdr, JSONValue.string)),
            ("dolbyVision", .optional(entry?.dolbyVision) { .object([("profile", .uint(UInt64($0.profile))), ("level", .uint(UInt64($0.level)))]) }),
            ("declaredBitRate", .optional(entry?.declaredBitRate) { .object([("max", .uint(UInt64($0.maxBitrate))), ("average", .uint(UInt64($0.avgBitrate))), ("bufferSize", .uint(UInt64($0.bufferSizeDB)))]) }),
            ("sampleEntries", .array(track.sampleEntries.map(sampleEntryJSON))),
            ("path", .string(track.path.description)),
        ])
    }

    /// Tags as an object (keys unique: ``MovieMetadata/dictionary``).
    static func tagsJSON(_ tags: [MovieMetadata.Tag]) -> JSONValue {
        .object(tags.map { ($0.key, .string($0.value)) })
    }

    static func colourJSON(_ colr: ColourInformationBox) -> JSONValue {
        switch colr.colour {
        case let .codePoints(primaries, transfer, matrix, fullRange):
            return .object([("type", .string(colr.colourType.description)), ("primaries", .uint(UInt64(primaries))), ("transfer", .uint(UInt64(transfer))), ("matrix", .uint(UInt64(matrix))), ("fullRange", .optional(fullRange, JSONValue.bool))])
        case .iccProfile(let bytes):
            return .object([("type", .string(colr.colourType.description)), ("iccProfileSize", .uint(UInt64(bytes.count)))])
        case .other:
            return .object([("type", .string(colr.colourType.description))])
        }
    }

    static func sampleEntryJSON(_ entry: SampleEntry) -> JSONValue {
        var members: [(String, JSONValue)] = [
            ("format", .string(entry.format.description)),
            ("codecString", .string(entry.codecString)),
            ("originalFormat", .optional(entry.originalFormat) { .string($0.description) }),
            ("protectionScheme", .optional(entry.protectionScheme) { .string($0.description) }),
        ]
        members.append(("configuration", .optional(entry.configuration) { .object($0.fields.map { ($0.name, BoxFields.jsonValue($0.value)) }) }))
        return .object(members)
    }

    static func findingJSON(_ finding: Finding) -> JSONValue {
        .object([
            ("id", .string(finding.id)),
            ("severity", .string(finding.severity.rawValue)),
            ("message", .string(finding.message)),
            ("offset", .optional(finding.offset) { .uint($0) }),
            ("path", .optional(finding.path, JSONValue.string)),
        ])
    }

    static func overallBitRate(_ file: MP4File) -> UInt64? {
        guard let seconds = file.movie?.durationSeconds else { return nil }
        return CheckedMath.bitRate(byteCount: file.layout.fileSize, seconds: seconds)
    }

    // MARK: Text

    static func text(_ file: MP4File) -> String {
        let layout = file.layout
        var lines: [String] = []
        func row(_ label: String, _ value: String) { lines.append(label.padding(12) + value) }
        row("File:", file.name)
        row("Size:", "\(Format.bytes(layout.fileSize)) (\(Format.grouped(layout.fileSize)) bytes)")
        if let f = file.fileType {
            row("Brands:", "\(f.majorBrand) (minor \(f.minorVersion)), compatible: \(f.compatibleBrands.map(\.description).joined(separator: " "))")
        } else {
            row("Brands:", "none (no ftyp)")
        }
        row("Kind:", kindDescription(file))
        if let seconds = file.movie?.durationSeconds, seconds > 0 || !file.isFragmented {
            var text = "\(Format.clock(seconds)) (\(Format.fixed(seconds, 3)) s)"
            if file.movie?.tracks.contains(where: \.factsFromFragments) == true && (file.movie?.header?.duration ?? 0) == 0 && file.movie?.fragmentDuration == nil {
                text += " measured from the movie fragments"
            } else if let last = file.movie?.lastFragmentDurationSeconds, last == seconds {
                text += " from the last movie fragment (its tfdt and samples)"
            }
            if let rate = overallBitRate(file) { text += ", \(Format.bitRate(rate)) overall" }
            row("Duration:", text)
        } else if file.isFragmented {
            row("Duration:", "not in moov (the samples are in movie fragments; `mp4probe samples FILE` reads them)")
        }
        row("Faststart:", file.faststartVerdict)
        if let tracks = file.movie?.tracks, !tracks.isEmpty {
            lines.append("Tracks:")
            // Columns line up whatever the ids and kinds ("#1 video", "#12 subtitle").
            let idWidth = tracks.map { "#\($0.trackID)".count }.max() ?? 2
            for track in tracks {
                lines.append("  " + trackLine(track, samplesInFragments: file.movie?.hasMovieExtends ?? false, idWidth: idWidth))
                if let extra = pictureLine(track) { lines.append("  " + String(repeating: " ", count: idWidth + 2) + extra) }
                if let frames = framesLine(track) { lines.append("  " + String(repeating: " ", count: idWidth + 2) + frames) }
            }
        }
        if let metadata = file.movie?.metadata {
            let shown = metadata.dictionary.filter { $0.key != "creation_time" }
            if let created = metadata.tag("creation_time") { row("Created:", created) }
            if !shown.isEmpty {
                lines.append("Tags:")
                let width = min(24, (shown.map(\.key.count).max() ?? 0) + 1)
                for tag in shown.prefix(40) { lines.append("  " + (tag.key + ":").padding(width) + " " + String(tag.value.prefix(200)).replacingControlCharacters()) }
                if shown.count > 40 { lines.append("  ... \(shown.count - 40) more (--json lists them all)") }
            }
            if !metadata.chapters.isEmpty {
                lines.append("Chapters: (\(metadata.chapterSource == .neroChapterList ? "chpl" : "chapter track"))")
                for chapter in metadata.chapters.prefix(40) { lines.append("  \(Format.clock(chapter.startSeconds))  \(String(chapter.title.prefix(200)).replacingControlCharacters())") }
                if metadata.chapters.count > 40 { lines.append("  ... \(metadata.chapters.count - 40) more (--json lists them all)") }
            }
        }
        let findings = file.findings
        if !findings.isEmpty {
            lines.append("Findings:")
            for finding in findings {
                var location = ""
                if let path = finding.path { location += " [\(path)]" }
                if let offset = finding.offset { location += " @\(offset)" }
                lines.append("  \(finding.severity.rawValue.padding(8))\(finding.id)\(location): \(finding.message)")
            }
        }
        return lines.joined(separator: "\n") + "\n"
    }

    static func kindDescription(_ file: MP4File) -> String {
        switch file.kind {
        case .progressive: return "progressive" + (file.layout.mediaDataBoxes.count > 1 ? " (\(file.layout.mediaDataBoxes.count) mdat boxes)" : "")
        case .fragmented:
            if file.layout.walkStoppedAt != nil, let first = file.layout.boxes.first(where: { $0.type == .moof }) {
                return "fragmented (movie fragments from byte \(Format.grouped(first.offset)) on, not walked over the network: `mp4probe samples URL` reads them)"
            }
            let indexed = file.layout.indexedRanges.reduce(0) { $0 + $1.subsegments.count }
            let count = file.layout.boxes.filter { $0.type == .moof }.count + indexed
            return "fragmented (\(count) movie fragment\(count == 1 ? "" : "s")\(indexed > 0 ? ", as its sidx lists them" : ""))"
        case .initSegment: return "init segment (moov with mvex, no media)"
        case .mediaSegment: return "media segment (movie fragments without moov: needs an init segment)"
        case .headerOnly: return "header only (moov without mdat)"
        case .unknown: return "unknown (neither moov nor movie fragments)"
        }
    }

    /// The one-line faststart verdict.
    /// Colour, field order and HDR of a video track, when its sample entry says.
    static func pictureLine(_ track: Track) -> String? {
        guard let entry = track.sampleEntries.first else { return nil }
        var parts: [String] = []
        if let format = track.pictureFormat {
            let scan = format.interlaced.map { $0 ? " interlaced" : " progressive" } ?? ""
            parts.append("\(format.bitDepth)-bit \(format.chroma.rawValue)\(scan)")
        }
        if let hdr = entry.hdr { parts.append(hdr + (entry.dolbyVision.map { " profile \($0.profile) level \($0.level)" } ?? "")) }
        if let colr = entry.colour, case let .codePoints(primaries, transfer, matrix, fullRange) = colr.colour {
            parts.append("colour \(primaries)/\(transfer)/\(matrix)" + (fullRange.map { $0 ? " full range" : " limited range" } ?? ""))
        } else if let colr = entry.colour {
            parts.append("colour \(colr.colourType)")
        }
        if let order = entry.fieldHandling?.fieldOrder, track.pictureFormat == nil { parts.append(order == "progressive" ? "progressive" : "interlaced (\(order))") }
        if let display = entry.masteringDisplay { parts.append("mastering display \(Format.fixed(display.minLuminanceCandelas, 4))–\(Format.fixed(display.maxLuminanceCandelas, 0)) cd/m²") }
        if let light = entry.contentLightLevel { parts.append("MaxCLL \(light.maxContentLightLevel), MaxFALL \(light.maxPictureAverageLightLevel)") }
        return parts.isEmpty ? nil : parts.joined(separator: ", ")
    }

    /// What a video track's sample table says of its frames (``FrameStructure``).
    static func framesLine(_ track: Track) -> String? {
        guard let frames = track.frameStructure() else { return nil }
        var parts = [frames.constantFrameRate ? "constant frame rate" : "variable frame rate"]
        parts.append(frames.maxConsecutiveBFrames == 0 ? "no B-frames" : "up to \(frames.maxConsecutiveBFrames) B-frame\(frames.maxConsecutiveBFrames == 1 ? "" : "s") in a row")
        parts.append(frames.openGOP ? "open GOPs" : "closed GOPs")
        if let longest = frames.longestGOPSeconds { parts.append("longest GOP \(Format.fixed(longest, 2)) s") }
        if let peak = frames.peakGOPBitRate { parts.append("peak \(Format.bitRate(peak)) over a GOP") }
        return "frames: " + parts.joined(separator: ", ")
    }

    static func trackLine(_ track: Track, samplesInFragments: Bool, idWidth: Int = 2) -> String {
        // Kinds are at most 8 letters ("subtitle", "metadata", "timecode").
        var parts: [String] = ["#\(track.trackID)".aligned(idWidth), track.kind.rawValue.aligned(8)]
        if let entry = track.sampleEntries.first {
            var codec = entry.codingFormat.description
            if entry.originalFormat != nil { codec = "\(entry.format)→\(codec)" + (entry.protectionScheme.map { " (\($0))" } ?? "") }
            parts.append(codec)
            parts.append(entry.codecString)
            if let w = entry.pictureWidth, let h = entry.pictureHeight, track.kind == .video || entry.kind == .video {
                var size = "\(w)x\(h)"
                if entry.sizeFromParameterSet, let ew = entry.width, let eh = entry.height { size += " (parameter set; entry \(ew)x\(eh))" }
                if let header = track.header, header.width > 0, Int(header.width.rounded()) != Int(w) || Int(header.height.rounded()) != Int(h) {
                    size += " (display \(Int(header.width.rounded()))x\(Int(header.height.rounded())))"
                }
                if let rotation = track.header?.rotationDegrees, rotation != 0 { size += " rotated \(rotation)°" }
                if let pasp = entry.pixelAspectRatio, pasp.hSpacing != pasp.vSpacing, pasp.vSpacing > 0 { size += " SAR \(pasp.hSpacing):\(pasp.vSpacing)" }
                parts.append(size)
                if let seconds = track.durationSeconds, seconds > 0, track.sampleCount > 0 {
                    parts.append("\(Format.fixed(Double(track.sampleCount) / seconds, 3)) fps")
                }
            }
            if track.kind == .audio || entry.kind == .audio {
                if let rate = entry.effectiveSampleRate { parts.append("\(Format.fixed(rate, 0)) Hz") }
                if let channels = entry.effectiveChannelCount { parts.append("\(channels) ch") }
                if entry.audioFromFrameHeader { parts.append("(frame header)") }
            }
        } else {
            parts.append("(no sample entry)")
        }
        if let timescale = track.timescale { parts.append("timescale \(timescale)") }
        if let seconds = track.durationSeconds, seconds > 0 || !samplesInFragments { parts.append("\(Format.fixed(seconds, 3)) s") }
        if samplesInFragments && track.sampleCount == 0 {
            parts.append("samples in movie fragments")
        } else {
            parts.append(Format.count(track.sampleCount, "sample"))
        }
        if let language = track.language { parts.append(language) }
        if let rate = track.bitRate { parts.append(Format.bitRate(rate)) }
        if let list = track.editList, !list.entries.isEmpty {
            let edits = list.entries
            parts.append("edit list (\(list.shape.rawValue)): \(edits.count) entr\(edits.count == 1 ? "y" : "ies")" + (edits.first.map { $0.isEmpty ? " (starts with a delay)" : ($0.mediaTime > 0 ? " (skips \($0.mediaTime) media units)" : "") } ?? ""))
        }
        return parts.joined(separator: "  ")
    }
}

extension String {
    /// Padded with spaces to exactly `width` characters (longer text is left as is).
    func aligned(_ width: Int) -> String {
        count >= width ? self : self + String(repeating: " ", count: width - count)
    }

    /// Padded to `width`, with at least one space after it.
    func padding(_ width: Int) -> String {
        count >= width ? self + " " : self + String(repeating: " ", count: width - count)
    }
}
