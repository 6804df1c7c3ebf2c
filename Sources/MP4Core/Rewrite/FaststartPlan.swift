/// A faststart rewrite, planned without writing anything: the new order of the top-level boxes
/// (`moov` moved in front of the media), the new `moov` bytes with every chunk offset
/// relocated, and the output as a list of pieces — byte ranges copied from the input, and the
/// new `moov` — that a writer streams in order.
///
/// Every absolute file offset in `moov` is relocated through the top-level box it falls in:
/// `stco`/`co64` of every track (an `stco` is promoted to `co64` when a relocated offset passes
/// 2^32, repeated until the sizes settle), `saio` offsets of progressive encrypted tracks, and
/// `iloc` extents of `meta` boxes. What cannot be relocated safely is refused with
/// ``MP4Error/Kind/unsupported`` rather than written broken.
public struct FaststartPlan: Sendable {
    /// What the rewrite does for a file.
    public enum Verdict: String, Sendable, Hashable, Codable {
        /// `moov` moves in front of the media.
        case rewrite
        /// `moov` already precedes the media (or there is no media): nothing to move.
        case alreadyFaststart = "already-faststart"
        /// A fragmented file: `moov` is at the front by construction; nothing to move.
        case fragmented
    }

    /// One part of the output, in order.
    public enum Piece: Sendable, Hashable {
        /// Input bytes copied unchanged.
        case copy(Range<UInt64>)
        /// New bytes (the rewritten `moov`, or a patched box header).
        case bytes([UInt8])

        /// Bytes this piece writes.
        public var count: UInt64 {
            switch self {
            case .copy(let range): return range.upperBound - range.lowerBound
            case .bytes(let bytes): return UInt64(bytes.count)
            }
        }
    }

    /// A top-level box in the output.
    public struct PlacedBox: Sendable, Hashable {
        public var type: FourCC
        public var inputOffset: UInt64
        public var outputOffset: UInt64
        public var size: UInt64
    }

    /// Options of the rewrite.
    public struct Options: Sendable, Hashable {
        /// Drop top-level `free`/`skip` padding (kept by default: every other box stays
        /// byte-identical).
        public var dropsPadding: Bool

        public init(dropsPadding: Bool = false) { self.dropsPadding = dropsPadding }
    }

    public var verdict: Verdict
    /// The output, piece by piece (empty unless ``verdict`` is ``Verdict/rewrite``).
    public var pieces: [Piece]
    /// What a rewrite writes: ``pieces`` for a rewrite, else the whole input unchanged (a file
    /// already faststart, or fragmented). The rewriter and ``FaststartView`` both execute it.
    public var outputPieces: [Piece] { verdict == .rewrite ? pieces : [.copy(0..<inputSize)] }
    /// The output's top-level boxes in order.
    public var boxes: [PlacedBox]
    /// Size of the input.
    public var inputSize: UInt64
    /// Size of the output.
    public var outputSize: UInt64
    /// Size of `moov` before and after.
    public var movieSize: (before: UInt64, after: UInt64)
    /// Chunk (and other) offsets rewritten.
    public var relocatedOffsetCount: Int
    /// `stco` tables promoted to `co64`.
    public var promotedTableCount: Int
    /// Notes for the user (dropped padding, tracks with external data left alone).
    public var notes: [String]

    /// Plans the rewrite of `file` from the `moov` bytes it kept (``MP4File/movieBytes``;
    /// read again from `source` only when the file lacks them).
    /// - Throws: ``MP4Error`` — `.unsupported` for what cannot be rewritten safely (`cmov`,
    ///   several `moov`, an offset outside every box, a truncated input...), `.io` when the
    ///   source fails.
    public static func make(_ file: MP4File, source: some ByteSource, options: Options = Options()) async throws -> FaststartPlan {
        let layout = file.layout
        var plan = FaststartPlan(verdict: .alreadyFaststart, pieces: [], boxes: [], inputSize: layout.fileSize, outputSize: layout.fileSize, movieSize: (0, 0), relocatedOffsetCount: 0, promotedTableCount: 0, notes: [])
        guard let moovBox = layout.movieBox else {
            throw MP4Error(.unsupported, "the file has no moov box: there is nothing to move")
        }
        plan.movieSize = (moovBox.size, moovBox.size)
        if file.isFragmented {
            plan.verdict = .fragmented
            return plan
        }
        if layout.moviePlacement != .afterMediaData { return plan }
        let moov = try checkRewritable(file)
        let safety = try FaststartSafety(checking: file)

        // The new order: everything before the first mdat, then moov, then the rest.
        let firstMedia = layout.boxes.firstIndex { $0.type == .mdat } ?? layout.boxes.count
        // Padding is dropped while the order is built, so that `leadingCount` (where moov goes)
        // counts only the boxes that stay: dropping it afterwards shifted moov behind mdat.
        var order: [TopLevelBox] = []
        var dropped = 0
        func keep(_ box: TopLevelBox) {
            if options.dropsPadding && (box.type == .free || box.type == .skip) { dropped += 1 } else { order.append(box) }
        }
        for (i, box) in layout.boxes.enumerated() where i < firstMedia && box.type != .moov { keep(box) }
        let leadingCount = order.count
        for (i, box) in layout.boxes.enumerated() where i >= firstMedia && box.type != .moov { keep(box) }
        if dropped > 0 { plan.notes.append("dropped \(dropped) free/skip box(es)") }
        // The bytes opening the file read (a file opened elsewhere may lack them: read again).
        let inputMovie: [UInt8]
        if let kept = file.movieBytes, kept.count == Int(moovBox.availableSize) {
            inputMovie = kept
        } else {
            var loader = SourceLoader(source: source)
            inputMovie = try await loader.read(moovBox.offset..<moovBox.availableEnd, path: .top(.moov))
        }
        var relocations = try OffsetRelocations.collect(moov, movieOffset: moovBox.offset, bytes: inputMovie, notes: &plan.notes)

        // Promote until the sizes settle: each promotion grows moov and moves the media.
        var movieSize = UInt64(inputMovie.count)
        var placed: [PlacedBox] = []
        var remap = OffsetMap(boxes: [], placed: [])
        for _ in 0...relocations.tables.count {
            movieSize = UInt64(inputMovie.count) + relocations.growth
            placed = Self.place(order, leadingCount: leadingCount, movieOffset: moovBox.offset, movieSize: movieSize)
            remap = OffsetMap(boxes: layout.boxes, placed: placed)
            if try !relocations.promoteWhereNeeded(remap) { break }
        }
        let newMovie = try relocations.apply(remap: remap, explicitSize: moovBox.header.extendsToEnd)
        guard UInt64(newMovie.count) == movieSize else {
            throw MP4Error(.unsupported, "internal size mismatch while rebuilding moov (\(newMovie.count) vs \(movieSize))", path: .top(.moov))
        }
        try safety.checkRelocation(newMovie: newMovie, placed: placed, limits: .default)

        // Pieces: input ranges merged where contiguous, the new moov in its place.
        var pieces: [Piece] = []
        func copy(_ range: Range<UInt64>) {
            if case .copy(let last)? = pieces.last, last.upperBound == range.lowerBound {
                pieces[pieces.count - 1] = .copy(last.lowerBound..<range.upperBound)
            } else if !range.isEmpty {
                pieces.append(.copy(range))
            }
        }
        for (i, box) in order.enumerated() {
            if i == leadingCount { pieces.append(.bytes(newMovie)) }
            if box.header.extendsToEnd && i != order.count - 1 {
                // A size-0 box that is no longer last needs its size written out.
                guard box.header.headerSize == 8, box.availableSize <= UInt64(UInt32.max) else {
                    throw MP4Error(.unsupported, "'\(box.type)' at \(box.offset) runs to the end of the file (size 0) and would need a 64-bit header", offset: box.offset, path: .top(box.type))
                }
                pieces.append(.bytes(ByteWriter.bigEndian(box.availableSize, width: 4)))
                copy((box.offset + 4)..<box.availableEnd)
            } else {
                copy(box.offset..<box.availableEnd)
            }
        }
        if leadingCount == order.count { pieces.append(.bytes(newMovie)) }
        if layout.unparsedTailByteCount > 0 {
            copy((layout.fileSize - layout.unparsedTailByteCount)..<layout.fileSize)
            plan.notes.append("kept \(layout.unparsedTailByteCount) trailing byte(s) that form no box")
        }
        // The plan's own promise, checked before anyone writes it: moov before every mdat.
        if let movie = placed.firstIndex(where: { $0.type == .moov }), let media = placed.firstIndex(where: { $0.type == .mdat }), media < movie {
            throw MP4Error(.internalError, "the planned layout puts mdat before moov (a bug in the faststart planner; nothing was written)", path: .top(.moov))
        }
        plan.verdict = .rewrite
        plan.pieces = pieces
        plan.boxes = placed
        plan.outputSize = pieces.reduce(0) { $0 + $1.count }
        plan.movieSize = (UInt64(inputMovie.count), movieSize)
        plan.relocatedOffsetCount = relocations.offsetCount
        plan.promotedTableCount = relocations.promotedCount
        return plan
    }


    /// What makes a moov-at-end file unsafe to rewrite, refused: a truncated input, several
    /// `moov`, a top-level `meta` (item offsets), a compressed `moov`. Returns the parsed `moov`.
    static func checkRewritable(_ file: MP4File) throws -> BoxNode {
        let layout = file.layout
        if let truncated = layout.boxes.first(where: \.isTruncated) {
            throw MP4Error(.unsupported, "the input is truncated: '\(truncated.type)' at \(truncated.offset) claims \(truncated.size) bytes but the file ends after \(truncated.availableSize); rewriting would lose data", offset: truncated.offset, path: .top(truncated.type))
        }
        if layout.boxes.filter({ $0.type == .moov }).count > 1 {
            throw MP4Error(.unsupported, "the file has several moov boxes; which one players use is ambiguous", path: .top(.moov))
        }
        if let meta = layout.boxes.first(where: { $0.type == .meta }) {
            throw MP4Error(.unsupported, "a top-level meta box may hold item offsets (iloc) into the media; it is not relocated", offset: meta.offset, path: .top(.meta))
        }
        guard let moov = file.movieBox else { throw MP4Error(.unsupported, "moov was not parsed", path: .top(.moov)) }
        var found: (node: BoxNode, path: BoxPath)?
        moov.walk(path: .top(.moov)) { node, path -> BoxNode.WalkStep in
            guard node.type == .cmov else { return .descend }
            found = (node, path)
            return .stop
        }
        if let cmov = found {
            throw MP4Error(.unsupported, "moov is compressed (cmov): its chunk offsets cannot be relocated", offset: cmov.node.header.offset, path: cmov.path)
        }

        return moov
    }

    /// Output positions of `order` with `moov` (of `movieSize`) after the first `leadingCount`.
    static func place(_ order: [TopLevelBox], leadingCount: Int, movieOffset: UInt64, movieSize: UInt64) -> [PlacedBox] {
        var placed: [PlacedBox] = []
        var position: UInt64 = 0
        for (i, box) in order.enumerated() {
            if i == leadingCount {
                placed.append(PlacedBox(type: .moov, inputOffset: movieOffset, outputOffset: position, size: movieSize))
                position += movieSize
            }
            placed.append(PlacedBox(type: box.type, inputOffset: box.offset, outputOffset: position, size: box.availableSize))
            position += box.availableSize
        }
        if leadingCount == order.count {
            placed.append(PlacedBox(type: .moov, inputOffset: movieOffset, outputOffset: position, size: movieSize))
        }
        return placed
    }
}

/// Where an input offset goes: through the top-level box holding it, to that box's new place.
/// Plain sorted arrays and a one-entry cache (chunk offsets mostly ascend within one `mdat`),
/// since it runs once or twice per chunk offset.
struct OffsetMap {
    private let starts: [UInt64]
    private let ends: [UInt64]
    /// New offset of each box's start, or `UInt64.max` for boxes that do not move with the
    /// media (`moov`, dropped boxes).
    private let targets: [UInt64]
    private var last = 0

    init(boxes: [TopLevelBox], placed: [FaststartPlan.PlacedBox]) {
        var target: [UInt64: UInt64] = [:]
        for box in placed where box.type != .moov { target[box.inputOffset] = box.outputOffset }
        starts = boxes.map(\.offset)
        ends = boxes.map(\.availableEnd)
        targets = boxes.map { $0.type == .moov ? UInt64.max : (target[$0.offset] ?? UInt64.max) }
    }

    /// The new offset of input offset `offset`, or `nil` when it lies in no box that moves
    /// with the media (an offset equal to a box's end maps to the new end).
    mutating func callAsFunction(_ offset: UInt64) -> UInt64? {
        if last < starts.count, starts[last] <= offset, offset < ends[last] { return map(offset, last) }
        var low = 0, high = starts.count
        while low < high {
            let mid = (low + high) / 2
            if starts[mid] <= offset { low = mid + 1 } else { high = mid }
        }
        guard low > 0, offset <= ends[low - 1] else { return nil }
        last = low - 1
        return map(offset, low - 1)
    }

    private func map(_ offset: UInt64, _ index: Int) -> UInt64? {
        targets[index] == UInt64.max ? nil : targets[index] + (offset - starts[index])
    }
}

