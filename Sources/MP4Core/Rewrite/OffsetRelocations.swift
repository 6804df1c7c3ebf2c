/// The absolute file offsets inside a `moov` that a rewrite must relocate, found once and
/// patched into a copy of the `moov` bytes: `stco`/`co64` (with `stco` → `co64` promotion),
/// `saio` of progressive tracks and `iloc` extents stored in the same file.
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

    /// Finds every offset table under `moov` (whose bytes start at file offset `movieOffset`).
    static func collect(_ moov: BoxNode, movieOffset: UInt64, bytes: [UInt8], notes: inout [String]) throws -> OffsetRelocations {
        var result = OffsetRelocations(original: bytes)
        func index(_ node: BoxNode) -> Int { Int(node.header.offset - movieOffset) }
        func visit(_ node: BoxNode, path: BoxPath, ancestors: [Int], external: Bool) throws {
            var external = external
            if node.type == .trak, let dref = node.descendant(.mdia, .minf, .dinf, .dref) {
                // A track whose data lives in another file keeps its offsets.
                if dref.children.contains(where: { ($0.flags ?? 1) & 1 == 0 }) {
                    external = true
                    notes.append("\(path): data is in another file (dref); its offsets are left unchanged")
                }
            }
            let start = index(node)
            // The bytes the box really has in moov (its header may claim more).
            let size = min(Int(clamping: node.header.size), bytes.count - start)
            let contentStart = start + node.header.headerSize + 4  // after version and flags
            switch node.type {
            case .stco, .co64:
                guard !external, let table = node.sampleTable else { break }
                let entryBytes = node.type == .stco ? 4 : 8
                let entries = contentStart + 4
                guard entries + table.entryCount * entryBytes <= bytes.count else {
                    throw MP4Error(.malformed, "'\(node.type)' entries run past moov", offset: node.header.offset, path: path)
                }
                result.tables.append(Table(type: node.type, boxStart: start, boxSize: size, entriesStart: entries, count: table.entryCount, entryBytes: entryBytes, ancestors: ancestors, path: path))
            case .saio:
                guard !external, let flags = node.flags, let version = node.version else { break }
                var position = contentStart + (flags & 1 != 0 ? 8 : 0)
                guard position + 4 <= bytes.count else { throw MP4Error(.malformed, "saio is cut short", offset: node.header.offset, path: path) }
                let count = Int(Self.read(bytes, position, 4))
                position += 4
                let entryBytes = version == 0 ? 4 : 8
                guard count <= (size - (position - start)) / entryBytes else {
                    throw MP4Error(.malformed, "saio declares \(count) offsets that do not fit in the box", offset: node.header.offset, path: path)
                }
                result.tables.append(Table(type: .saio, boxStart: start, boxSize: size, entriesStart: position, count: count, entryBytes: entryBytes, ancestors: ancestors, path: path))
            case .iloc:
                guard !external else { break }
                result.items += try Self.itemFields(node, start: start, contentStart: contentStart, bytes: bytes, path: path)
            default:
                break
            }
            let childPaths = BoxNode.childPaths(node.children, parent: path)
            for (child, childPath) in zip(node.children, childPaths) {
                try visit(child, path: childPath, ancestors: ancestors + [start], external: external)
            }
        }
        try visit(moov, path: .top(.moov), ancestors: [], external: false)
        return result
    }

    /// Reads the `iloc` offset fields that point into this file (construction method 0, data
    /// reference 0), ISO/IEC 14496-12 §8.11.3.
    static func itemFields(_ node: BoxNode, start: Int, contentStart: Int, bytes: [UInt8], path: BoxPath) throws -> [ItemField] {
        let version = Int(node.version ?? 0)
        guard node.header.size <= UInt64(bytes.count - start) else { throw MP4Error(.malformed, "iloc runs past moov", offset: node.header.offset, path: path) }
        let end = start + Int(node.header.size)
        var p = contentStart
        func take(_ n: Int) throws -> UInt64 {
            guard n >= 0, p + n <= end else { throw MP4Error(.malformed, "iloc is cut short", offset: node.header.offset, path: path) }
            defer { p += n }
            return Self.read(bytes, p, n)
        }
        let sizes = try take(2)
        let offsetSize = Int(sizes >> 12 & 0xF), lengthSize = Int(sizes >> 8 & 0xF), baseSize = Int(sizes >> 4 & 0xF)
        let indexSize = version >= 1 ? Int(sizes & 0xF) : 0
        for size in [offsetSize, lengthSize, baseSize, indexSize] where ![0, 4, 8].contains(size) {
            throw MP4Error(.malformed, "iloc field size \(size) is not 0, 4 or 8", offset: node.header.offset, path: path)
        }
        let itemCount = try take(version < 2 ? 2 : 4)
        var fields: [ItemField] = []
        for _ in 0..<itemCount {
            _ = try take(version < 2 ? 2 : 4)  // item_ID
            let method = version >= 1 ? try take(2) & 0xF : 0
            let reference = try take(2)
            let basePosition = p
            let base = try take(baseSize)
            let extentCount = try take(2)
            var extents: [(position: Int, value: UInt64)] = []
            for _ in 0..<extentCount {
                _ = try take(indexSize)
                extents.append((p, try take(offsetSize)))
                _ = try take(lengthSize)
            }
            guard method == 0 && reference == 0 else { continue }
            if baseSize > 0 {
                fields.append(ItemField(position: basePosition, byteCount: baseSize, absolute: extents.isEmpty ? [base] : extents.map { base &+ $0.value }, value: base, path: path))
            } else if offsetSize > 0 {
                for extent in extents { fields.append(ItemField(position: extent.position, byteCount: offsetSize, absolute: [extent.value], value: extent.value, path: path)) }
            } else if !extents.isEmpty {
                throw MP4Error(.unsupported, "an iloc item has neither base nor extent offsets to relocate", offset: node.header.offset, path: path)
            }
        }
        return fields
    }

    static func read(_ bytes: [UInt8], _ at: Int, _ n: Int) -> UInt64 {
        var value: UInt64 = 0
        for i in 0..<n { value = value << 8 | UInt64(bytes[at + i]) }
        return value
    }

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
