import MP4Core

/// What the inspector page shows of one file, gathered without I/O from the opened file and,
/// when there is one, its sample index (``SeekPlanner``): the verdict, the top-level boxes and
/// the box tree, the tracks, tags and chapters, each track's chunks along the file, seek plans
/// across the movie, and (for a page `serve` answers) the cached byte ranges.
///
/// Output is bounded whatever the file holds: at most ``maxTreeNodes`` boxes in the tree, a
/// chart of at most ``maxSpansPerTrack`` spans per track (adjacent chunks merged), at most
/// ``maxPlans`` seek plans of at most ``maxRangesPerPlan`` ranges each, strings cut at 300
/// characters.
public struct InspectorData: Sendable {
    /// What a live page (`serve`'s `_/inspect`) polls and plays.
    public struct Live: Sendable, Hashable {
        /// `{BASE}_/status?url=ENC`: the cached ranges, refreshed.
        public var statusURL: String
        /// The proxy URL a `<video>` plays.
        public var videoURL: String
        public init(statusURL: String, videoURL: String) {
            self.statusURL = statusURL
            self.videoURL = videoURL
        }
    }

    public static let maxTreeNodes = 20_000
    public static let maxLayoutRows = 20_000
    public static let maxSpansPerTrack = 1_500
    public static let maxPlans = 200
    /// Keyframes of the main track up to which the page carries a plan for each (exact
    /// answers at every time); beyond, ``maxPlans`` spread over the movie.
    public static let maxKeyframePlans = 4_000
    public static let maxRangesPerPlan = 64
    /// The window each seek plan covers after its time: what a player needs to start there.
    public static let planSeconds = 1.0

    public var file: MP4File
    public var planner: SeekPlanner?
    /// The byte ranges a cache holds of the file, when the page shows a cache.
    public var cachedRanges: [Range<UInt64>]?
    public var live: Live?

    public init(file: MP4File, planner: SeekPlanner?, cachedRanges: [Range<UInt64>]? = nil, live: Live? = nil) {
        self.file = file
        self.planner = planner
        self.cachedRanges = cachedRanges
        self.live = live
    }

    /// The data as JSON (safe inside an HTML `<script>` element).
    public func json() -> String {
        var out = PageJSON()
        out.object { o in
            o.member("name") { $0.string(Self.cut(file.name)) }
            o.member("size") { $0.number(file.layout.fileSize) }
            o.member("kind") { $0.string(file.kind.rawValue) }
            o.member("verdict") { $0.string(file.faststartVerdict) }
            o.member("placement") { $0.string(file.layout.moviePlacement.rawValue) }
            o.member("startupBytes") { $0.optional(file.bytesBeforePlayback) { $0.number($1) } }
            o.member("duration") { $0.optional(file.movie?.durationSeconds) { $0.number($1) } }
            o.member("layout") { writeLayout(&$0) }
            o.member("boxes") { writeTree(&$0) }
            o.member("tracks") { writeTracks(&$0) }
            o.member("tags") { writeTags(&$0) }
            o.member("chapters") { writeChapters(&$0) }
            o.member("chunks") { writeChunks(&$0) }
            o.member("interleave") { writeInterleave(&$0) }
            var exact = false
            o.member("plans") { exact = writePlans(&$0) }
            o.member("plansExact") { $0.bool(exact) }
            o.member("planSeconds") { $0.number(Self.planSeconds) }
            o.member("findings") { writeFindings(&$0) }
            o.member("cached") { $0.optional(cachedRanges) { json, ranges in Self.writeRanges(ranges, to: &json) } }
            o.member("live") { json in
                json.optional(live) { json, live in
                    json.object { $0.member("status") { $0.string(live.statusURL) }; $0.member("video") { $0.string(live.videoURL) } }
                }
            }
        }
        return out.text
    }

    static func cut(_ text: String) -> String { text.count > 300 ? String(text.prefix(300)) + "…" : text }

    /// The top-level boxes as rows `[type, offset, size]`, and the fragments the scan took
    /// from an index as `fragments` rows.
    private func writeLayout(_ json: inout PageJSON) {
        let boxes = file.layout.boxes
        json.array { rows in
            // At most maxLayoutRows rows (the scan allows a million boxes): the last stands
            // for the rest of the file.
            let shown = boxes.count > Self.maxLayoutRows ? Self.maxLayoutRows - 1 : boxes.count
            for box in boxes.prefix(shown) {
                rows.array { $0.string(box.type.description); $0.number(box.offset); $0.number(box.availableSize) }
            }
            if shown < boxes.count {
                let start = boxes[shown].offset
                rows.array { $0.string("…"); $0.number(start); $0.number(file.layout.fileSize - min(start, file.layout.fileSize)) }
            }
            for indexed in file.layout.indexedRanges {
                rows.array { $0.string("fragments"); $0.number(indexed.range.lowerBound); $0.number(UInt64(indexed.range.count)) }
            }
        }
    }

    /// The box tree: `{t, o, s, h, v, f, x, c}` (type, offset, size, header size, version,
    /// flags, fields as `[name, value]`, truncated, children); at most ``maxTreeNodes`` nodes,
    /// then `more` says how many children were left out.
    private func writeTree(_ json: inout PageJSON) {
        var budget = Self.maxTreeNodes
        func write(_ node: BoxNode, _ json: inout PageJSON) {
            budget -= 1
            json.object { o in
                o.member("t") { $0.string(node.type.description) }
                if let name = BoxCatalog.descriptor(for: node.type)?.name { o.member("n") { $0.string(name) } }
                o.member("o") { $0.number(node.header.offset) }
                o.member("s") { $0.number(node.header.size) }
                o.member("h") { $0.number(Int(node.header.headerSize)) }
                if let version = node.version { o.member("v") { $0.number(Int(version)) } }
                if let flags = node.flags { o.member("fl") { $0.string(Hex.flags(flags)) } }
                if node.isTruncated { o.member("x") { $0.bool(true) } }
                let fields = node.fields
                if !fields.isEmpty {
                    o.member("f") { json in
                        json.array { list in
                            for field in fields.prefix(40) {
                                list.array { $0.string(field.name); $0.string(Self.cut(Self.text(field.value))) }
                            }
                        }
                    }
                }
                if !node.children.isEmpty {
                    // The budget is spent as boxes are written, children's children included.
                    var written = 0
                    o.member("c") { json in
                        json.array { list in
                            for child in node.children where budget > 0 {
                                write(child, &list)
                                written += 1
                            }
                        }
                    }
                    if written < node.children.count { o.member("more") { $0.number(node.children.count - written) } }
                }
            }
        }
        json.array { list in
            for top in file.topLevelNodes where budget > 0 { write(top, &list) }
        }
    }

    /// A field as text, as `boxes` prints it.
    static func text(_ value: FieldValue) -> String {
        switch value {
        case .int(let v): return String(v)
        case .uint(let v): return String(v)
        case .double(let v): return String(v)
        case .string(let v): return v
        case .bool(let v): return v ? "true" : "false"
        case .list(let items): return "[" + items.prefix(50).map(text).joined(separator: ", ") + (items.count > 50 ? ", …" : "") + "]"
        case .null: return "null"
        }
    }

    private func writeTracks(_ json: inout PageJSON) {
        json.array { list in
            for track in file.movie?.tracks ?? [] {
                let entry = track.sampleEntries.first
                list.object { o in
                    o.member("id") { $0.number(UInt64(track.trackID)) }
                    o.member("kind") { $0.string(track.kind.rawValue) }
                    o.member("codec") { $0.optional(entry?.codingFormat.description) { $0.string(Self.cut($1)) } }
                    o.member("codecString") { $0.optional(entry?.codecString) { $0.string(Self.cut($1)) } }
                    o.member("width") { $0.optional(track.width) { $0.number(Int($1)) } }
                    o.member("height") { $0.optional(track.height) { $0.number(Int($1)) } }
                    o.member("rate") { $0.optional(track.kind == .audio ? entry?.effectiveSampleRate : nil) { $0.number($1) } }
                    o.member("channels") { $0.optional(track.kind == .audio ? entry?.effectiveChannelCount : nil) { $0.number(UInt64($1)) } }
                    o.member("duration") { $0.optional(track.durationSeconds) { $0.number($1) } }
                    o.member("samples") { $0.number(track.sampleCount) }
                    o.member("bitRate") { $0.optional(track.bitRate) { $0.number($1) } }
                    o.member("language") { $0.optional(track.language) { $0.string(Self.cut($1)) } }
                }
            }
        }
    }

    private func writeTags(_ json: inout PageJSON) {
        json.array { list in
            for tag in (file.movie?.metadata.dictionary ?? []).prefix(200) {
                list.array { $0.string(Self.cut(tag.key)); $0.string(Self.cut(tag.value)) }
            }
        }
    }

    private func writeChapters(_ json: inout PageJSON) {
        json.array { list in
            for chapter in (file.movie?.metadata.chapters ?? []).prefix(500) {
                list.array { $0.number(chapter.startSeconds); $0.string(Self.cut(chapter.title)) }
            }
        }
    }

    /// How far a reader front to back runs ahead in one track over another (seconds) and the
    /// most bytes between two chunks of one track, as `check` measures them
    /// (``SampleLayoutAnalysis``); `null` without a sample index or with one track.
    private func writeInterleave(_ json: inout PageJSON) {
        guard let planner, planner.tracks.count > 1 else { json.null(); return }
        let analysis = SampleLayoutAnalysis(planner: planner, layout: file.layout)
        guard let seconds = analysis.interleaveSeconds, let bytes = analysis.interleaveBytes else { json.null(); return }
        json.object { o in
            o.member("seconds") { $0.number(seconds) }
            o.member("bytes") { $0.number(bytes) }
        }
    }

    /// Each track's chunks along the file: `{id, kind, spans: [start, end, firstTime,
    /// lastTime, chunks, ...]}`, chunks closer than a 1/``maxSpansPerTrack`` of the file merged.
    private func writeChunks(_ json: inout PageJSON) {
        let gap = max(1, file.layout.fileSize / UInt64(Self.maxSpansPerTrack))
        json.array { list in
            for indexed in planner?.tracks ?? [] {
                var spans: [(range: Range<UInt64>, first: Double, last: Double, chunks: Int)] = []
                var sample = 0
                indexed.samples.forEachChunkSpan(in: 0..<indexed.samples.sampleCount) { range, count in
                    let time = indexed.decodePresentationTime(of: sample)
                    sample += count
                    if let last = spans.last, range.lowerBound >= last.range.upperBound, range.lowerBound - last.range.upperBound <= gap {
                        spans[spans.count - 1] = (last.range.lowerBound..<range.upperBound, last.first, time, last.chunks + 1)
                    } else {
                        // Memory stays bounded and every chunk stays counted: halved when full.
                        if spans.count >= Self.maxSpansPerTrack * 4 { spans = Self.coarsened(spans, to: Self.maxSpansPerTrack * 2) }
                        spans.append((range, time, time, 1))
                    }
                }
                list.object { o in
                    o.member("id") { $0.number(UInt64(indexed.track.trackID)) }
                    o.member("kind") { $0.string(indexed.track.kind.rawValue) }
                    o.member("spans") { json in
                        json.array { values in
                            for span in Self.coarsened(spans, to: Self.maxSpansPerTrack) {
                                values.number(span.range.lowerBound); values.number(span.range.upperBound)
                                values.number(span.first); values.number(span.last); values.number(span.chunks)
                            }
                        }
                    }
                }
            }
        }
    }

    /// `spans` merged pairwise (the closest neighbours first would be finer; pairs keep it
    /// linear) until at most `limit` remain.
    static func coarsened(_ spans: [(range: Range<UInt64>, first: Double, last: Double, chunks: Int)], to limit: Int) -> [(range: Range<UInt64>, first: Double, last: Double, chunks: Int)] {
        var spans = spans
        while spans.count > limit {
            var merged: [(range: Range<UInt64>, first: Double, last: Double, chunks: Int)] = []
            merged.reserveCapacity(spans.count / 2 + 1)
            var index = 0
            while index < spans.count {
                if index + 1 < spans.count {
                    let a = spans[index], b = spans[index + 1]
                    merged.append((min(a.range.lowerBound, b.range.lowerBound)..<max(a.range.upperBound, b.range.upperBound), a.first, b.last, a.chunks + b.chunks))
                } else {
                    merged.append(spans[index])
                }
                index += 2
            }
            spans = merged
        }
        return spans
    }

    /// Seek plans `{t, k, track, r, bytes}` (the time planned at, the keyframe's time and track,
    /// the ranges as flat pairs, their bytes), and whether they are exact. Exact: one at each
    /// keyframe of the main track (at most ``maxKeyframePlans``), so that the plan of any time is
    /// that of the last keyframe at or before it (what `mp4probe seek` finds); else at up to
    /// ``maxPlans`` times spread over the movie, which the page labels as such.
    private func writePlans(_ json: inout PageJSON) -> Bool {
        var exact = false
        json.array { list in
            guard let planner, let end = planner.movieEnd ?? file.movie?.durationSeconds, end.isFinite, end > 0 else { return }
            var times: [Double] = []
            if let main = planner.mainTrack, let syncs = main.samples.syncSampleIndices, syncs.count <= Self.maxKeyframePlans {
                times = syncs.map { main.presentationTime(of: $0) }.filter { $0.isFinite && $0 < end }.sorted()
                exact = !times.isEmpty
            }
            if !exact {
                // A duration is input: bounded before it becomes a count (2^64 s trapped).
                let count = max(1, Int(min(end, Double(Self.maxPlans)).rounded(.up)))
                times = (0..<count).map { end * Double($0) / Double(count) }
            }
            var previous: SeekPlan?
            for time in times {
                guard let plan = try? planner.plan(at: max(0, time), duration: Self.planSeconds) else { continue }
                if let previous, previous.keyframeTime == plan.keyframeTime, previous.ranges == plan.ranges { continue }
                previous = plan
                list.object { o in
                    o.member("t") { $0.number(max(0, time)) }
                    o.member("k") { $0.number(plan.keyframeTime) }
                    o.member("track") { $0.number(UInt64(plan.keyframeTrackID)) }
                    o.member("r") { Self.writeRanges(Self.merged(plan.ranges, to: Self.maxRangesPerPlan), to: &$0) }
                    o.member("bytes") { $0.number(plan.byteCount) }
                }
            }
        }
        return exact
    }

    /// `ranges` with the smallest gaps between neighbours closed until at most `limit` remain.
    /// O(n log n).
    static func merged(_ ranges: [Range<UInt64>], to limit: Int) -> [Range<UInt64>] {
        let sorted = ranges.sorted { $0.lowerBound < $1.lowerBound }
        guard sorted.count > limit, limit > 0 else { return sorted }
        let gaps = (0..<(sorted.count - 1)).map { index in
            (gap: sorted[index + 1].lowerBound - min(sorted[index + 1].lowerBound, sorted[index].upperBound), index: index)
        }
        let closed = Set(gaps.sorted { $0.gap < $1.gap }.prefix(sorted.count - limit).map(\.index))
        var out: [Range<UInt64>] = []
        var current = sorted[0]
        for index in 1..<sorted.count {
            if closed.contains(index - 1) {
                current = current.lowerBound..<max(current.upperBound, sorted[index].upperBound)
            } else {
                out.append(current)
                current = sorted[index]
            }
        }
        out.append(current)
        return out
    }

    static func writeRanges(_ ranges: [Range<UInt64>], to json: inout PageJSON) {
        json.array { values in
            for range in ranges.prefix(4096) { values.number(range.lowerBound); values.number(range.upperBound) }
        }
    }

    private func writeFindings(_ json: inout PageJSON) {
        json.array { list in
            for finding in file.findings.prefix(200) {
                list.array { $0.string(finding.severity.rawValue); $0.string(finding.id); $0.string(Self.cut(finding.message)); $0.optional(finding.offset) { $0.number($1) } }
            }
        }
    }
}
