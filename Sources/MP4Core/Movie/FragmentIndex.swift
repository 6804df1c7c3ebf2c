/// The samples of a fragmented file, read from its movie fragments (`moof`): one
/// ``SampleTable`` per track, built with the `trex` defaults of `moov`.
///
/// Loading reads each `moof` it covers (never the `mdat` payloads). A byte range limits the
/// load to the fragments that start inside it, which is how a seek reads only the fragments
/// around its time when `sidx` or `mfra` say where they are (see ``FragmentLocator``); sample
/// indices then count from the first loaded fragment.
public struct FragmentIndex: Sendable {
    /// Per track ID, the samples of the loaded fragments.
    public var tables: [UInt32: SampleTable]
    /// The `moof` boxes that were loaded, in file order.
    public var fragments: [TopLevelBox]
    /// Whether every `moof` of the file was loaded (so sample indices count from the start).
    public var coversWholeFile: Bool
    /// Problems found in the fragments.
    public var findings: [Finding]
    /// What loading read from the source.
    public var statistics: ReadStatistics
    /// Whether every track's first loaded fragment has a `tfdt`, so decode times are absolute
    /// even when the load did not start at the first fragment.
    public var hasAbsoluteTimes: Bool

    /// Loads the fragments of `file` from `source` whose `moof` starts in `byteRange` (all of
    /// them when `nil`).
    /// - Throws: ``MP4Error`` `.io` when the source fails, `.limitExceeded` when the `moof`s
    ///   exceed ``ParseLimits/maxMetadataBytes`` or the box tree exceeds its bounds.
    public static func load(_ file: MP4File, from source: some ByteSource, byteRange: Range<UInt64>? = nil, limits: ParseLimits = .default) async throws -> FragmentIndex {
        var loader = SourceLoader(source: source, limits: limits)
        var cache = Cache()
        return try await load(file, with: &loader, byteRange: byteRange, cache: &cache)
    }

    /// The samples of the one fragment whose `moof` occupies `moof` (the range of the whole
    /// box), read from `source`: for a reader that walks fragments in file order without a
    /// scan of the file (a preload), indexing each as it arrives. Decode times are absolute
    /// when the fragment has a `tfdt` (``hasAbsoluteTimes``), else they count from 0.
    public static func load(_ file: MP4File, moofAt moof: Range<UInt64>, from source: some ByteSource, limits: ParseLimits = .default) async throws -> FragmentIndex {
        var one = file
        let header = BoxHeader(type: .moof, offset: moof.lowerBound, headerSize: 8, size: UInt64(moof.count))
        one.layout.boxes = [TopLevelBox(header: header, availableSize: UInt64(moof.count))]
        one.layout.indexedRanges = []
        return try await load(one, from: source, byteRange: moof, limits: limits)
    }

    /// What loads of one file share, so that widening a load (a seek) reads nothing twice: the
    /// parsed `moof`s by offset, and the `moof`s found in each indexed subsegment by its start.
    struct Cache {
        var moofs: [UInt64: BoxNode] = [:]
        var subsegments: [UInt64: [TopLevelBox]] = [:]
    }

    /// The `moof`s of one indexed subsegment. Its first bytes (up to 64 KiB) are read once: a
    /// `moof` inside them is parsed from them and cached, so loading it costs no second read
    /// (over HTTP, one request per fragment instead of two). Where the walk leaves those bytes
    /// before the subsegment ends (a subsegment of several fragments, a long `emsg`), the rest
    /// of its headers are walked.
    static func fragments(of subsegment: Range<UInt64>, length: UInt64, loader: inout SourceLoader, parser: inout BoxTreeParser, cache: inout Cache) async throws -> [TopLevelBox] {
        if let known = cache.subsegments[subsegment.lowerBound] { return known }
        let head = try await loader.read(subsegment.lowerBound..<min(subsegment.upperBound, subsegment.lowerBound + 65536), path: .top(.moof))
        var boxes: [TopLevelBox] = []
        var position = 0
        // Where the walk of the head stopped: the first box it did not see whole.
        var next = subsegment.lowerBound
        while head.count - position >= 8 {
            let offset = subsegment.lowerBound + UInt64(position)
            guard let header = try? BoxHeader.parse(head[position...], at: offset, containerEnd: subsegment.upperBound) else {
                next = subsegment.upperBound  // not boxes: nothing more to find
                break
            }
            let available = min(header.size, subsegment.upperBound - offset)
            if header.type == .moof {
                boxes.append(TopLevelBox(header: header, availableSize: available))
                if available <= UInt64(head.count - position), cache.moofs[offset] == nil {
                    try loader.charge(available, what: "the movie fragments (moof)", offset: offset, path: .top(.moof))
                    cache.moofs[offset] = try parser.parse(Array(head[position..<(position + Int(available))]), at: offset, path: .top(.moof))
                }
            }
            next = offset + available
            guard available > 0, available < UInt64(head.count - position) else { break }
            position += Int(available)
        }
        if next < subsegment.upperBound {
            boxes += try await TopLevelScanner.scan(&loader, in: next..<subsegment.upperBound, length: length).filter { $0.type == .moof }
        }
        cache.subsegments[subsegment.lowerBound] = boxes
        return boxes
    }

    /// As ``load(_:from:byteRange:limits:)``, reading through `loader` (each `moof` read is
    /// charged to its budget once), taking parsed `moof`s from `cache` (by offset) and adding
    /// the ones it reads, so that widening a load reads each `moof` once.
    static func load(_ file: MP4File, with loader: inout SourceLoader, byteRange: Range<UInt64>?, cache: inout Cache) async throws -> FragmentIndex {
        let limits = loader.limits
        let before = loader.statistics
        var defaults: [UInt32: TrackExtendsBox] = [:]
        for trex in file.movieBox?.first(.mvex)?.all(.trex) ?? [] {
            if let box = trex.model(TrackExtendsBox.self) { defaults[box.trackID] = box }
        }
        var builders: [UInt32: FragmentTableBuilder] = [:]
        for track in file.movie?.tracks ?? [] where builders[track.trackID] == nil {
            builders[track.trackID] = FragmentTableBuilder(trackID: track.trackID, defaults: defaults[track.trackID], maxSamples: limits.maxFragmentSamples, allSamplesSync: track.kind == .audio)
        }
        var allMoofs = file.layout.boxes.filter { $0.type == .moof }
        // Fragments the scan took from a segment index: walk the headers of the subsegments
        // this load needs (all of them for a whole index, a few for a seek).
        var parser = BoxTreeParser(limits: limits)
        if !file.layout.indexedRanges.isEmpty {
            var found: [TopLevelBox] = []
            for subsegment in file.layout.indexedRanges.flatMap(\.subsegments) {
                if byteRange.map({ $0.overlaps(subsegment) || $0.contains(subsegment.lowerBound) }) ?? true {
                    found += try await Self.fragments(of: subsegment, length: file.layout.fileSize, loader: &loader, parser: &parser, cache: &cache)
                } else {
                    // Outside the load, a subsegment still counts as a fragment of the file.
                    found.append(TopLevelBox(header: BoxHeader(type: .moof, offset: subsegment.lowerBound, headerSize: 8, size: UInt64(subsegment.count)), availableSize: UInt64(subsegment.count)))
                }
            }
            allMoofs = (allMoofs + found).sorted { $0.offset < $1.offset }
        }
        let moofs = allMoofs.filter { byteRange?.contains($0.offset) ?? true }
        // A load from the first fragment on starts with the samples `moov` holds (hybrid
        // files); a partial load starts at its first fragment's tfdt.
        if let first = allMoofs.first, byteRange?.contains(first.offset) ?? true {
            for track in file.movie?.tracks ?? [] where track.sampleCount > 0 {
                guard let stbl = track.sampleTableBox else { continue }
                builders[track.trackID]?.appendMovieSamples(SampleTable(stbl: stbl, path: track.sampleTablePath), path: track.sampleTablePath)
            }
        }
        var findings: [Finding] = []
        let length = file.layout.fileSize
        // The moofs the open already parsed whole (``MP4File/Options/loadsAllBoxes``: a box
        // listing, the inspector) are not read again.
        for node in file.topLevelNodes where node.type == .moof && !node.children.isEmpty && !node.isTruncated && cache.moofs[node.header.offset] == nil {
            cache.moofs[node.header.offset] = node
        }
        for (number, moof) in allMoofs.enumerated() where byteRange?.contains(moof.offset) ?? true {
            let path = BoxPath.top(.moof, ordinalNumber: allMoofs.count > 1 ? number + 1 : nil)
            let node: BoxNode
            if let cached = cache.moofs[moof.offset] {
                node = cached
            } else {
                node = try await loader.loadBox(moof.offset..<moof.availableEnd, path: path, what: "the movie fragments (moof)", parser: &parser)
                cache.moofs[moof.offset] = node
            }
            var implicitBase = moof.offset
            let trafs = node.all(.traf)
            for (i, traf) in trafs.enumerated() {
                let trafPath = path.appending(.traf, ordinalNumber: trafs.count > 1 ? i + 1 : nil)
                guard let header = traf.first(.tfhd)?.model(TrackFragmentHeaderBox.self) else {
                    findings.append(Finding(.trafWithoutTfhd, message: "traf has no readable tfhd; its samples are skipped", offset: traf.header.offset, path: trafPath))
                    continue
                }
                if builders[header.trackID] == nil && file.movie == nil {
                    // A media segment: no moov, so no defaults; the runs are still indexed.
                    builders[header.trackID] = FragmentTableBuilder(trackID: header.trackID, defaults: nil, maxSamples: limits.maxFragmentSamples, allSamplesSync: false)
                }
                guard builders[header.trackID] != nil else {
                    findings.append(Finding(.trafUnknownTrack, message: "traf refers to track \(header.trackID), which moov does not have; skipped", offset: traf.header.offset, path: trafPath))
                    continue
                }
                if defaults[header.trackID] == nil && file.movieBox?.first(.mvex) != nil {
                    findings.append(Finding(.missingTrex, message: "mvex has no trex for track \(header.trackID); fragment defaults are taken as 0", path: trafPath))
                    defaults[header.trackID] = TrackExtendsBox(trackID: header.trackID, defaultSampleDescriptionIndex: 1, defaultSampleDuration: 0, defaultSampleSize: 0, defaultSampleFlags: 0)
                }
                implicitBase = builders[header.trackID]?.append(traf: traf, path: trafPath, header: header, moofOffset: moof.offset, implicitBase: implicitBase, fileLength: length) ?? implicitBase
            }
        }
        findings += parser.findings
        var tables: [UInt32: SampleTable] = [:]
        var absolute = true
        for (id, builder) in builders.sorted(by: { $0.key < $1.key }) {
            if builder.hasUnanchoredTimes { absolute = false }
            findings += builder.findings
            tables[id] = builder.build()
        }
        var statistics = loader.statistics
        statistics.readCount -= before.readCount
        statistics.byteCount -= before.byteCount
        return FragmentIndex(tables: tables, fragments: moofs, coversWholeFile: moofs.count == allMoofs.count, findings: findings, statistics: statistics, hasAbsoluteTimes: absolute)
    }
}
