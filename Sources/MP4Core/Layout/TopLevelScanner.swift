/// Reads the top level of a file from box headers alone, skipping every payload.
///
/// The scan never reads `mdat`: for each box it reads the header (through a read-ahead
/// window), records type, offset and size, and jumps to the next box. A truncated box, a size
/// below its header, a box running past the end of the file and trailing bytes are recorded
/// as findings; the scan itself fails only on I/O errors.
public enum TopLevelScanner {
    /// Scans `source`.
    /// - Returns: the layout, and the read window (holding the last bytes read) for loading
    ///   boxes without reading them twice.
    /// - Throws: ``MP4Error`` of kind ``MP4Error/Kind/io`` when the source fails.
    public static func scan(_ source: some ByteSource, limits: ParseLimits = .default) async throws -> FileLayout {
        var window = ReadWindow(loader: SourceLoader(source: source, limits: limits), length: try await source.length())
        return try await scan(&window, limits: limits)
    }

    static func scan(_ window: inout ReadWindow, limits: ParseLimits, followsSegmentIndex: Bool = false) async throws -> FileLayout {
        try await scan(&window, range: 0..<window.length, limits: limits, followsSegmentIndex: followsSegmentIndex)
    }

    /// Scans the boxes of `range` of `source` (a part of the top level, such as an indexed range
    /// of fragments), through `loader`.
    public static func scan(_ loader: inout SourceLoader, in range: Range<UInt64>, length: UInt64) async throws -> [TopLevelBox] {
        var window = ReadWindow(loader: loader, length: length)
        defer { loader = window.loader }
        return try await scan(&window, range: range, limits: loader.limits, followsSegmentIndex: false).boxes
    }

    static func scan(_ window: inout ReadWindow, range: Range<UInt64>, limits: ParseLimits, followsSegmentIndex: Bool, stopsAtFirstFragment: Bool = false) async throws -> FileLayout {
        let fileSize = range.upperBound
        var boxes: [TopLevelBox] = []
        var findings: [Finding] = []
        var offset: UInt64 = range.lowerBound
        var tail: UInt64 = 0
        var stoppedAt: UInt64?
        var indexed: [IndexedRange] = []
        var segmentIndexes: [UInt64: SegmentIndexBox] = [:]
        while offset < fileSize {
            let remaining = fileSize - offset
            let bytes = try await window.peek(offset, count: BoxHeader.maximumSize)
            if remaining < 8 {
                tail = remaining
                if bytes.allSatisfy({ $0 == 0 }) {
                    findings.append(Finding(.trailingPadding, message: "\(remaining) zero bytes after the last box", offset: offset))
                } else {
                    findings.append(Finding(.trailingBytes, message: "\(remaining) bytes after the last box do not form a box header", offset: offset))
                }
                break
            }
            let header: BoxHeader
            do {
                header = try BoxHeader.parse(bytes, at: offset, containerEnd: fileSize)
            } catch let error as MP4Error {
                tail = remaining
                let kind: Finding.Kind = error.kind == .truncated ? .truncatedBoxHeader : .invalidBoxSize
                findings.append(Finding(kind, message: "\(error.message); the last \(remaining) bytes are not read as boxes", offset: offset))
                break
            }
            let available = min(header.size, remaining)
            let box = TopLevelBox(header: header, availableSize: available)
            boxes.append(box)
            if box.isTruncated {
                let missing = header.size - available
                if header.type == .mdat {
                    findings.append(Finding(.mdatPastEof, message: "mdat claims \(header.size) bytes but the file ends \(missing) bytes early: the file is truncated", offset: offset, path: .top(.mdat)))
                } else {
                    findings.append(Finding(.boxTruncated, message: "'\(header.type)' claims \(header.size) bytes but the file ends \(missing) bytes early", offset: offset, path: .top(header.type)))
                }
            }
            if header.extendsToEnd {
                findings.append(Finding(.sizeZeroBox, message: "'\(header.type)' has size 0: it runs to the end of the file, so nothing can follow it", offset: offset, path: .top(header.type)))
            }
            if !header.type.isPrintable {
                findings.append(Finding(.garbageBoxType, message: "a box of type \(header.type) (not text) at the top level looks like garbage rather than a box", offset: offset))
            }
            if boxes.count >= limits.maxTopLevelBoxes, offset + available < fileSize {
                findings.append(Finding(.scanLimit, message: "stopped after \(boxes.count) top-level boxes (the limit)", offset: offset + available))
                tail = fileSize - (offset + available)
                break
            }
            offset += available
            if stopsAtFirstFragment && header.type == .moof {
                if offset < fileSize { stoppedAt = offset }
                break
            }
            // A segment index whose references follow it: take the fragments from it instead
            // of walking their headers one by one.
            if followsSegmentIndex, header.type == .sidx, !box.isTruncated, box.availableSize <= limits.maxOtherBoxSize,
               let sidx = try await Self.segmentIndex(box, window: &window, limits: limits) {
                segmentIndexes[box.offset] = sidx
                if let ranged = Self.indexedRange(sidx, of: box, fileSize: fileSize), ranged.range.lowerBound == offset {
                    indexed.append(ranged)
                    offset = ranged.range.upperBound
                }
            }
        }
        var layout = FileLayout(fileSize: fileSize, boxes: boxes, findings: findings + observations(boxes), unparsedTailByteCount: tail)
        layout.indexedRanges = indexed
        layout.segmentIndexes = segmentIndexes
        layout.walkStoppedAt = stoppedAt
        return layout
    }

    /// The top-level `sidx` in `box`, read through the window, or `nil` when it does not parse
    /// or has no time scale.
    static func segmentIndex(_ box: TopLevelBox, window: inout ReadWindow, limits: ParseLimits) async throws -> SegmentIndexBox? {
        let bytes = try await window.load(box.offset..<box.availableEnd)
        var parser = BoxTreeParser(limits: limits)
        guard let sidx = try? parser.parse(bytes, at: box.offset, path: .top(.sidx)).model(SegmentIndexBox.self), sidx.timescale > 0 else { return nil }
        return sidx
    }

    /// The fragments the top-level `sidx` in `box` describes, when it references media only
    /// (not other indexes), at least two subsegments, and bytes inside the file.
    static func indexedRange(_ sidx: SegmentIndexBox, of box: TopLevelBox, fileSize: UInt64) -> IndexedRange? {
        guard sidx.references.count >= 2, !sidx.references.contains(where: \.referencesIndex) else { return nil }
        let (start, overflow) = box.availableEnd.addingReportingOverflow(sidx.firstOffset)
        guard !overflow, start <= fileSize else { return nil }
        var subsegments: [Range<UInt64>] = []
        subsegments.reserveCapacity(sidx.references.count)
        var position = start
        for reference in sidx.references {
            let next = position + UInt64(reference.referencedSize)  // position ≤ fileSize < 2^63
            guard reference.referencedSize > 0, next <= fileSize else { return nil }
            subsegments.append(position..<next)
            position = next
        }
        return IndexedRange(range: start..<position, subsegments: subsegments, referenceID: sidx.referenceID, timescale: sidx.timescale, duration: sidx.totalDuration, indexOffset: box.offset)
    }

    /// Findings about the order and kinds of top-level boxes.
    static func observations(_ boxes: [TopLevelBox]) -> [Finding] {
        var findings: [Finding] = []
        let moovs = boxes.filter { $0.type == .moov }
        if moovs.count > 1 {
            findings.append(Finding(.multipleMoov, message: "\(moovs.count) moov boxes; players use the first, at \(moovs[0].offset)", offset: moovs[1].offset))
        }
        let padding = boxes.filter { [.free, .skip, .wide].contains($0.type) }
        if !padding.isEmpty {
            let total = padding.reduce(UInt64(0)) { $0 + $1.availableSize }
            findings.append(Finding(.freeSpace, message: "\(padding.count) free/skip/wide box(es), \(total) bytes of padding", offset: padding[0].offset))
        }
        if let first = boxes.first, first.type != .ftyp && first.type != .styp, boxes.contains(where: { $0.type == .ftyp }) {
            findings.append(Finding(.ftypNotFirst, message: "'\(first.type)' comes before ftyp", offset: first.offset))
        }
        let mdats = boxes.filter { $0.type == .mdat }
        if mdats.count > 1, boxes.firstIndex(where: { $0.type == .moof }) == nil {
            findings.append(Finding(.multipleMdat, message: "\(mdats.count) mdat boxes", offset: mdats[1].offset))
        }
        if let moov = moovs.first, let firstMdat = mdats.first, moov.offset > firstMdat.offset {
            findings.append(Finding(.notFaststart, message: "moov at \(moov.offset) comes after mdat at \(firstMdat.offset): a progressive player must download \(moov.availableEnd) bytes before playback; move moov to the front (e.g. `ffmpeg -i IN -c copy -movflags +faststart OUT`)", offset: moov.offset, path: .top(.moov)))
        }
        return findings
    }
}
