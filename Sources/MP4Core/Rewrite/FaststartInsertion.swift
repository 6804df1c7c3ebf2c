/// Faststart in place by inserting space at the start of the file: planned without I/O
/// beyond the reads of ``FaststartPlan``, executed by MP4IO's `InPlaceFaststart` with
/// `fallocate(FALLOC_FL_INSERT_RANGE)` where the filesystem allows it.
///
/// The file gains ``insertedLength`` bytes (a multiple of the filesystem block) at offset 0,
/// which moves every byte of it, media included, up by that much without copying it. Into the
/// new space go the boxes that led the file (`ftyp` and whatever preceded the first `mdat`),
/// the new `moov` (every chunk offset plus ``insertedLength``; `stco` promoted to `co64` where
/// an offset passes 2^32) and a `free` box that covers the rest of the space and the old
/// leading boxes. Then the old `moov` goes: the file is cut where it began when it is the last
/// box, else its type becomes `free`.
///
/// ```
/// before: [ftyp][mdat .................][moov]
/// after:  [ftyp][moov'][free ......[ftyp]][mdat .................]   (old moov cut off)
///          \___ the inserted space __/
/// ```
public struct FaststartInsertion: Sendable {
    /// The bytes inserted at offset 0 (a multiple of the block size).
    public var insertedLength: UInt64
    /// What is written at offset 0 after the insertion: the leading boxes, the new `moov`,
    /// and the header of the `free` box that covers the rest of the inserted space.
    public var head: [UInt8]
    /// What becomes of the old `moov`, at its offset after the insertion.
    public var tail: Tail
    /// The input's size, and the size of the result.
    public var inputSize: UInt64
    public var outputSize: UInt64
    /// `moov`'s size before and after.
    public var movieSize: (before: UInt64, after: UInt64)
    public var relocatedOffsetCount: Int
    public var promotedTableCount: Int
    public var notes: [String]
    /// The result's top-level boxes in order (the old `moov`, when it stays as `free`, is
    /// listed as `free`).
    public var boxes: [FaststartPlan.PlacedBox]

    /// The old `moov`'s end of the operation.
    public enum Tail: Sendable, Hashable {
        /// The file is cut at this offset (the old `moov` was the last box).
        case cut(at: UInt64)
        /// The 4-byte box type at this offset becomes `free` (something follows the old `moov`).
        case free(typeAt: UInt64)
    }

    /// Plans the insertion for `file` with filesystem blocks of `blockSize` bytes. `nil` when
    /// there is nothing to move (already faststart, fragmented).
    /// - Throws: ``MP4Error`` `.unsupported` for what the rewrite refuses (see
    ///   ``FaststartPlan/make(_:source:options:)``), `.invalidRequest` for a block size that is
    ///   not a power of two between 512 bytes and 64 MiB.
    public static func make(_ file: MP4File, source: some ByteSource, blockSize: UInt64) async throws -> FaststartInsertion? {
        guard blockSize >= 512, blockSize <= 64 << 20, blockSize & (blockSize - 1) == 0 else {
            throw MP4Error(.invalidRequest, "a block size of \(blockSize) bytes cannot be used for an insertion")
        }
        let layout = file.layout
        guard let moovBox = layout.movieBox else {
            throw MP4Error(.unsupported, "the file has no moov box: there is nothing to move")
        }
        if file.isFragmented || layout.moviePlacement != .afterMediaData { return nil }
        let moov = try FaststartPlan.checkRewritable(file)
        let safety = try FaststartSafety(checking: file)
        guard let firstMedia = layout.boxes.firstIndex(where: { $0.type == .mdat }) else { return nil }
        let leading = layout.boxes[..<firstMedia]
        let leadingEnd = layout.boxes[firstMedia].offset
        guard leading.allSatisfy({ !$0.header.extendsToEnd }) else {
            throw MP4Error(.unsupported, "a box before the media claims to run to the end of the file", path: .top(layout.boxes[0].type))
        }
        guard leadingEnd <= 16 << 20 else {
            throw MP4Error(.unsupported, "\(leadingEnd) bytes precede the media: more than an insertion copies (16 MiB)", offset: leadingEnd)
        }
        var notes: [String] = []
        let inputMovie: [UInt8]
        var loader = SourceLoader(source: source)
        if let kept = file.movieBytes, kept.count == Int(moovBox.availableSize) {
            inputMovie = kept
        } else {
            inputMovie = try await loader.read(moovBox.offset..<moovBox.availableEnd, path: .top(.moov))
        }
        let leadingBytes = try await loader.read(0..<leadingEnd, path: .top(layout.boxes[0].type))
        var relocations = try OffsetRelocations.collect(moov, movieOffset: moovBox.offset, bytes: inputMovie, notes: &notes)

        // Every box from the first mdat on moves up by the inserted length, which depends on
        // the new moov's size, which grows when a promotion to co64 is needed: settle both.
        var movieSize = UInt64(inputMovie.count)
        var inserted: UInt64 = 0
        var remap = OffsetMap(boxes: [], placed: [])
        var placed: [FaststartPlan.PlacedBox] = []
        for _ in 0...(relocations.tables.count + 1) {
            movieSize = UInt64(inputMovie.count) + relocations.growth
            // The head (the leading boxes, moov, the free header) must fit in the space: the
            // original bytes above it are what an undo gives back.
            inserted = (leadingEnd + movieSize + 8 + blockSize - 1) / blockSize * blockSize
            placed = leading.map { FaststartPlan.PlacedBox(type: $0.type, inputOffset: $0.offset, outputOffset: $0.offset, size: $0.availableSize) }
            for box in layout.boxes[firstMedia...] where box.type != .moov {
                placed.append(FaststartPlan.PlacedBox(type: box.type, inputOffset: box.offset, outputOffset: box.offset + inserted, size: box.availableSize))
            }
            remap = OffsetMap(boxes: layout.boxes, placed: placed)
            // A promotion grows moov, so the length: map again until nothing changes.
            if try !relocations.promoteWhereNeeded(remap) { break }
        }
        let newMovie = try relocations.apply(remap: remap, explicitSize: moovBox.header.extendsToEnd)
        guard UInt64(newMovie.count) == movieSize, inserted >= leadingEnd + movieSize + 8 else {
            throw MP4Error(.internalError, "internal size mismatch while rebuilding moov (\(newMovie.count) vs \(movieSize))", path: .top(.moov))
        }
        try safety.checkRelocation(newMovie: newMovie, placed: placed, limits: .default)
        // The free box: from the end of the new moov to where the old leading boxes end (now
        // `inserted` further up), so it covers the rest of the space and the old copies.
        let freeSize = inserted - movieSize
        guard freeSize <= UInt64(UInt32.max) else {
            throw MP4Error(.internalError, "the padding box would need a 64-bit size", path: .top(.free))
        }
        let head = leadingBytes + newMovie + ByteWriter.bigEndian(freeSize, width: 4) + Array("free".utf8)
        let movieIndex = layout.boxes.firstIndex { $0.offset == moovBox.offset } ?? layout.boxes.count - 1
        let movieIsLast = movieIndex == layout.boxes.count - 1 && layout.unparsedTailByteCount == 0
        let tail: Tail = movieIsLast ? .cut(at: moovBox.offset + inserted) : .free(typeAt: moovBox.offset + inserted + 4)
        if movieIsLast {
            notes.append("the old moov (\(moovBox.size) bytes) is cut off the end")
        } else {
            notes.append("the old moov (\(moovBox.size) bytes) becomes free space: boxes follow it")
        }
        var boxes = Array(placed[..<leading.count])
        boxes.append(FaststartPlan.PlacedBox(type: .moov, inputOffset: moovBox.offset, outputOffset: leadingEnd, size: movieSize))
        boxes.append(FaststartPlan.PlacedBox(type: .free, inputOffset: 0, outputOffset: leadingEnd + movieSize, size: freeSize))
        boxes += placed[leading.count...]
        if !movieIsLast {
            boxes.append(FaststartPlan.PlacedBox(type: .free, inputOffset: moovBox.offset, outputOffset: moovBox.offset + inserted, size: moovBox.availableSize))
            boxes.sort { $0.outputOffset < $1.outputOffset }
        }
        return FaststartInsertion(insertedLength: inserted, head: head, tail: tail, inputSize: layout.fileSize,
                                  outputSize: layout.fileSize + inserted - (movieIsLast ? moovBox.availableSize : 0),
                                  movieSize: (UInt64(inputMovie.count), movieSize), relocatedOffsetCount: relocations.offsetCount,
                                  promotedTableCount: relocations.promotedCount, notes: notes, boxes: boxes)
    }
}
