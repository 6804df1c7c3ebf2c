/// The absolute file offsets inside a `moov` that a rewrite must relocate, found once (every
/// ``FileOffsetBox``: `stco`/`co64` with `stco` → `co64` promotion, `saio` of progressive
/// tracks, `iloc` extents stored in the same file) and patched into a copy of the `moov` bytes.
///
/// Positions are indices into the `moov` bytes. Every count was validated against the box
/// bytes by the parser, and is re-checked here against the buffer before any access.
struct OffsetRelocations {
    /// A table of offsets: 4 or 8 bytes per entry, stored contiguously.
    struct Table {
        var type: FourCC
        /// Index of the box header in the `moov` bytes.
        var boxStart: Int
        var boxSize: Int
        /// Index of the first entry.
        var entriesStart: Int
        var count: Int
        var entryBytes: Int
        /// Header indices of the boxes that contain this one (moov first).
        var ancestors: [Int]
        /// `stco` to be written as `co64`.
        var promoted = false
        var path: BoxPath
    }

    /// One `iloc` offset field: `base_offset` of an item (its extents move with it) or one
    /// `extent_offset` when there is no base.
    struct ItemField {
        var position: Int
        var byteCount: Int
        /// The absolute offsets this field decides (base + each extent), to find where they
        /// move; the field's new value is its old one plus the common delta.
        var absolute: [UInt64]
        var value: UInt64
        var path: BoxPath
    }

    /// The `moov` bytes as read (shared, not copied).
    let original: [UInt8]
    var tables: [Table] = []
    var items: [ItemField] = []

    /// Bytes the promotions add to `moov`.
    var growth: UInt64 { tables.reduce(0) { $0 + ($1.promoted ? UInt64($1.count) * 4 : 0) } }
    var promotedCount: Int { tables.filter(\.promoted).count }
    var offsetCount: Int { tables.reduce(0) { $0 + $1.count } + items.count }

    /// Finds every offset under `moov` (whose bytes start at file offset `movieOffset`): one
    /// walk, asking each ``FileOffsetBox`` where its offsets are.
    static func collect(_ moov: BoxNode, movieOffset: UInt64, bytes: [UInt8], notes: inout [String]) throws -> OffsetRelocations {
        var result = OffsetRelocations(original: bytes)
        func index(_ node: BoxNode) -> Int { Int(node.header.offset - movieOffset) }
        // The header indices of the boxes above the one visited, and the depth of a track
        // whose data lives in another file (its offsets are left as they are).
        var ancestors: [(depth: Int, start: Int)] = []
        var externalDepth: Int?
        try moov.walk(path: .top(.moov)) { node, path in
            let depth = path.components.count
            while let last = ancestors.last, last.depth >= depth { ancestors.removeLast() }
            if let external = externalDepth, depth <= external { externalDepth = nil }
            defer { ancestors.append((depth, index(node))) }
            if node.type == .trak, let dref = node.descendant(.mdia, .minf, .dinf, .dref),
               dref.children.contains(where: { ($0.flags ?? 1) & 1 == 0 }) {
                externalDepth = depth
                notes.append("\(path): data is in another file (dref); its offsets are left unchanged")
            }
            guard externalDepth == nil else { return .descend }
            let fields: [FileOffsetField]
            if case .model(let model) = node.content, let holder = model.base.asFileOffsetBox {
                do {
                    fields = try holder.fileOffsetFields(version: node.version ?? 0, flags: node.flags ?? 0)
                } catch let error as MP4Error {
                    throw error.at(path: path)
                }
            } else if BoxCatalog.model(for: node.type)?.holdsFileOffsets == true {
                // A box that holds offsets but did not parse: the rewrite cannot keep it right.
                throw MP4Error(.malformed, "'\(node.type)' holds file offsets but could not be read", offset: node.header.offset, path: path)
            } else {
                return .descend
            }
            let start = index(node)
            // The bytes the box really has in moov (its header may claim more).
            let size = min(Int(clamping: node.header.size), bytes.count - start)
            let payload = start + node.header.headerSize + (node.version == nil ? 0 : 4)
            let boxAncestors = ancestors.map(\.start)
            for field in fields {
                switch field {
                case let .run(position, count, width):
                    guard payload + position + count * width <= start + size else {
                        throw MP4Error(.malformed, "'\(node.type)' offsets run past the box", offset: node.header.offset, path: path)
                    }
                    result.tables.append(Table(type: node.type, boxStart: start, boxSize: size, entriesStart: payload + position, count: count, entryBytes: width, ancestors: boxAncestors, path: path))
                case let .base(position, width, value, decides):
                    guard payload + position + width <= start + size else {
                        throw MP4Error(.malformed, "'\(node.type)' offsets run past the box", offset: node.header.offset, path: path)
                    }
                    result.items.append(ItemField(position: payload + position, byteCount: width, absolute: decides, value: value, path: path))
                }
            }
            return .descend
        }
        return result
    }

    static func read(_ bytes: [UInt8], _ at: Int, _ n: Int) -> UInt64 { UInt64(bigEndian: bytes[at..<(at + n)]) }

    static func write(_ value: UInt64, _ n: Int, into bytes: inout [UInt8], at: Int) {
        for i in 0..<n { bytes[at + i] = UInt8(truncatingIfNeeded: value >> UInt64(8 * (n - 1 - i))) }
    }

    /// Marks `stco` tables whose relocated offsets no longer fit in 32 bits. Returns whether
    /// anything new was promoted. A 32-bit `saio` or `iloc` field that overflows is refused.
    mutating func promoteWhereNeeded(_ map: OffsetMap) throws -> Bool {
        var remap = map
        var changed = false
        for t in tables.indices where tables[t].type == .stco && !tables[t].promoted {
            // The map keeps the order of offsets (boxes keep their order, only moov moves), so
            // the largest entry decides; every entry is remapped (and checked) by `apply`.
            let table = tables[t]
            let largest = original.withUnsafeBytes { input in
                (0..<table.count).reduce(UInt64(0)) { max($0, UInt64(UInt32(bigEndian: input.loadUnaligned(fromByteOffset: table.entriesStart + $1 * 4, as: UInt32.self)))) }
            }
            guard table.count > 0 else { continue }
            guard let new = remap(largest) else {
                throw MP4Error(.unsupported, "chunk offset \(largest) lies in no box of the file; the rewrite would break it", offset: largest, path: table.path)
            }
            if new > UInt64(UInt32.max) {
                tables[t].promoted = true
                changed = true
            }
        }
        return changed
    }

    /// The new `moov`: offsets relocated, promoted tables rewritten as `co64`, and the sizes of
    /// the boxes that contain them grown to match.
    func apply(remap map: OffsetMap, explicitSize: Bool) throws -> [UInt8] {
        var remap = map
        var bytes = original
        // Sizes of containers first: their headers do not move while later bytes are spliced.
        var growth: [Int: UInt64] = [:]
        for table in tables where table.promoted {
            for ancestor in table.ancestors { growth[ancestor, default: 0] += UInt64(table.count) * 4 }
        }
        if explicitSize && Self.read(bytes, 0, 4) == 0 {
            Self.write(UInt64(original.count), 4, into: &bytes, at: 0)
        }
        for (header, extra) in growth {
            let size32 = Self.read(bytes, header, 4)
            if size32 == 1 {
                Self.write(Self.read(bytes, header + 8, 8) + extra, 8, into: &bytes, at: header + 8)
            } else {
                guard size32 + extra <= UInt64(UInt32.max) else {
                    throw MP4Error(.unsupported, "a box containing a promoted co64 would pass 4 GiB", offset: UInt64(header))
                }
                Self.write(size32 + extra, 4, into: &bytes, at: header)
            }
        }
        // Offsets patched in place (stco that stays 32-bit, co64, saio), through raw buffers:
        // this loop runs once per chunk, hundreds of thousands of times for long files.
        try original.withUnsafeBytes { input in
            try bytes.withUnsafeMutableBytes { output in
                for table in tables where !table.promoted {
                    for i in 0..<table.count {
                        let position = table.entriesStart + i * table.entryBytes
                        let old = table.entryBytes == 4
                            ? UInt64(UInt32(bigEndian: input.loadUnaligned(fromByteOffset: position, as: UInt32.self)))
                            : UInt64(bigEndian: input.loadUnaligned(fromByteOffset: position, as: UInt64.self))
                        guard let new = remap(old) else {
                            throw MP4Error(.unsupported, "offset \(old) (entry \(i + 1)) lies in no box of the file; the rewrite would break it", offset: old, path: table.path)
                        }
                        if table.entryBytes == 4 {
                            guard new <= UInt64(UInt32.max) else {
                                throw MP4Error(.unsupported, "offset \(old) moves to \(new), past what a 32-bit '\(table.type)' entry holds", offset: old, path: table.path)
                            }
                            output.storeBytes(of: UInt32(new).bigEndian, toByteOffset: position, as: UInt32.self)
                        } else {
                            output.storeBytes(of: new.bigEndian, toByteOffset: position, as: UInt64.self)
                        }
                    }
                }
            }
        }
        for item in items {
            var delta: Int64?
            for absolute in item.absolute {
                guard let new = remap(absolute) else {
                    throw MP4Error(.unsupported, "item offset \(absolute) lies in no box of the file", offset: absolute, path: item.path)
                }
                let d = Int64(bitPattern: new &- absolute)
                if let delta, delta != d {
                    throw MP4Error(.unsupported, "the extents of an iloc item move by different amounts; they cannot share one base offset", offset: absolute, path: item.path)
                }
                delta = d
            }
            let new = UInt64(bitPattern: Int64(bitPattern: item.value) &+ (delta ?? 0))
            guard item.byteCount == 8 || new <= UInt64(UInt32.max) else {
                throw MP4Error(.unsupported, "an iloc offset moves past what its 32-bit field holds", offset: item.value, path: item.path)
            }
            Self.write(new, item.byteCount, into: &bytes, at: item.position)
        }
        // Promoted tables: splice in co64 boxes, from the last to the first.
        for table in tables.filter(\.promoted).sorted(by: { $0.boxStart > $1.boxStart }) {
            var writer = ByteWriter(capacity: 16 + table.count * 8)
            let co64 = writer.beginFullBox(.co64, version: 0, flags: 0)
            writer.u32(UInt32(clamping: table.count))
            for i in 0..<table.count {
                let old = Self.read(original, table.entriesStart + i * 4, 4)
                guard let new = remap(old) else {
                    throw MP4Error(.unsupported, "chunk offset \(old) lies in no box of the file", offset: old, path: table.path)
                }
                writer.u64(new)
            }
            try writer.end(co64)
            let box = writer.bytes
            guard table.boxSize == table.entriesStart - table.boxStart + table.count * 4 else {
                throw MP4Error(.unsupported, "'stco' has extra bytes after its entries; promoting it would drop them", path: table.path)
            }
            bytes.replaceSubrange(table.boxStart..<(table.boxStart + table.boxSize), with: box)
        }
        return bytes
    }
}
