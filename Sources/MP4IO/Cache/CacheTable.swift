import Foundation
import MP4Core

/// The persisted description of one cache entry: which resource, its length and validator, and
/// the byte ranges present in the entry's sparse data file. Written atomically (temporary file,
/// fsync, rename) and checksummed, so a torn or corrupt table is detected and discarded, never
/// trusted.
struct CacheTable: Equatable {
    static let formatVersion = 1

    var version: Int = CacheTable.formatVersion
    /// The resource (URL or path).
    var resource: String
    /// Its total length.
    var length: UInt64
    /// Its validator when the entry was filled (ETag, Last-Modified, size+mtime).
    var validator: String?
    /// A random name given each time the entry is started empty (new, changed upstream,
    /// damaged). A writer that streams into the data file outside the lock checks, before it
    /// claims the bytes, that the generation is still the one it started under: a reset by
    /// another process in between would otherwise have the table claim bytes it truncated away.
    /// `nil` in tables written before it existed.
    var generation: String?
    /// Present ranges. Stored as the set itself (inserting is a binary search and one splice),
    /// not rebuilt from the encoded pairs on every read and insert.
    var rangeSet: ByteRangeSet
    /// ``blockHash(_:)`` of each block of ``blockSize`` bytes that is wholly present (the last
    /// block ends at ``length``), by block index: a byte changed in the data file after it was
    /// written (disk error, another program) is found when the block is read, and fetched
    /// again instead of served. Empty in tables written before it existed.
    var blockChecksums: [UInt64: UInt64] = [:]
    /// When the origin last confirmed ``length`` and ``validator`` (Unix seconds): within the
    /// cache's maximum age the entry is used without asking the origin. `nil` in tables written
    /// before it existed, and after the origin was found changed.
    var validatedAt: Int64?
    /// The origin's `Content-Type` and `Last-Modified` when it last confirmed the entry, passed
    /// on to players when the entry is served without asking it. Empty in tables written
    /// before they were recorded.
    var attributes = ResourceAttributes()

    /// The unit of ``blockChecksums``: 1 MiB (8 bytes of table per MiB of data).
    static let blockSize: UInt64 = 1 << 20

    /// The byte range of block `index`.
    func block(_ index: UInt64) -> Range<UInt64> {
        let start = index * Self.blockSize
        return start..<min(start + Self.blockSize, length)
    }

    /// How many blocks the resource has (the last may be short).
    var blockCount: UInt64 { length / Self.blockSize + (length % Self.blockSize == 0 ? 0 : 1) }

    /// Whether every block checksum is of a block of the resource that the table says is
    /// present (an index never reaches `index * blockSize` unchecked).
    var checksumsArePresentBlocks: Bool {
        blockChecksums.keys.allSatisfy { $0 < blockCount && rangeSet.contains(block($0)) }
    }

    /// The indexes of the blocks `range` touches.
    func blocks(touching range: Range<UInt64>) -> ClosedRange<UInt64>? {
        guard !range.isEmpty else { return nil }
        return (range.lowerBound / Self.blockSize)...((range.upperBound - 1) / Self.blockSize)
    }

    init(resource: String, length: UInt64, validator: String?, generation: String? = CacheTable.newGeneration(), rangeSet: ByteRangeSet = ByteRangeSet()) {
        self.resource = resource
        self.length = length
        self.validator = validator
        self.generation = generation
        self.rangeSet = rangeSet
    }

    static func newGeneration() -> String { String(UInt64.random(in: 1...UInt64.max), radix: 16) }

    /// FNV-1a of every field as text (the generation only when present, so tables written
    /// before it existed still verify).
    func computedChecksum() -> String {
        var text = "\(version)|\(resource)|\(length)|\(validator ?? "-")|"
        if let generation { text = "\(version)|\(resource)|\(length)|\(validator ?? "-")|g=\(generation)|" }
        text += rangeSet.ranges.map { "\($0.lowerBound)-\($0.upperBound)" }.joined(separator: ",")
        if !blockChecksums.isEmpty {
            text += "|b=" + blockChecksums.keys.sorted().map { "\($0):\(blockChecksums[$0] ?? 0)" }.joined(separator: ",")
        }
        if let validatedAt { text += "|t=\(validatedAt)" }
        if let type = attributes.contentType { text += "|c=\(type)" }
        if let modified = attributes.lastModified { text += "|m=\(modified)" }
        return String(FNV1a.hash(text.utf8), radix: 16)
    }

    /// The file's form: ranges as `[start, end)` pairs, and the checksum.
    private struct Encoded: Codable {
        var version: Int
        var resource: String
        var length: UInt64
        var validator: String?
        var generation: String?
        var ranges: [[UInt64]]
        /// `[blockIndex, checksum]` pairs, ascending (absent in older tables).
        var blocks: [[UInt64]]?
        var validatedAt: Int64?
        var contentType: String?
        var lastModified: String?
        var checksum: String
    }

    /// Reads the table at `path`. `nil` when there is none; throws when it exists but is torn,
    /// corrupt, from another format, or inconsistent (ranges outside the length, overlapping).
    static func load(_ path: String) throws -> CacheTable? {
        try loadImage(path)?.table
    }

    /// A table and the bytes of the file it was read from or written as.
    struct FileImage {
        var bytes: [UInt8]
        var table: CacheTable
    }

    /// ``load(_:)``, with the file's bytes; when they are `known`'s bytes, `known`'s table
    /// without decoding them again. (A commit reads back the table it wrote last: decoding
    /// its JSON was 5 % of the proxy's CPU while a fragmented film's heads were walked.)
    static func loadImage(_ path: String, known: FileImage? = nil) throws -> FileImage? {
        // A table file is input too: one larger than any table could be is corrupt, and is not
        // read. (A 1 TiB resource in 1 MiB blocks lists 2^20 [index, checksum] pairs: 31.4 MB
        // of JSON at the largest checksums, computed.)
        // Opened as a trap could be there (``CacheFiles``): a link, FIFO or device is an error
        // (the table is then treated as corrupt and replaced, never followed or waited on).
        guard let bytes = try CacheFiles.read(path, limit: maxFileSize) else { return nil }
        if let known, known.bytes == bytes { return known }
        return FileImage(bytes: bytes, table: try decode(Data(bytes), path: path))
    }

    /// The largest table file read.
    static let maxFileSize: UInt64 = 64 << 20

    /// The table encoded in `data` (read from `path`); with `checksummed` false the checksum is
    /// not required to match (the fuzz target's way past it to the checks behind it).
    static func decode(_ data: Data, path: String, checksummed: Bool = true) throws -> CacheTable {
        guard let encoded = try? JSONDecoder().decode(Encoded.self, from: data) else {
            throw MP4Error(.malformed, "cache table \(path) is not readable (torn or corrupt)")
        }
        let pairs = encoded.ranges.compactMap { $0.count == 2 && $0[0] < $0[1] ? $0[0]..<$0[1] : nil }
        let set = ByteRangeSet(pairs)
        var table = CacheTable(resource: encoded.resource, length: encoded.length, validator: encoded.validator, generation: encoded.generation, rangeSet: set)
        table.version = encoded.version
        for pair in encoded.blocks ?? [] where pair.count == 2 { table.blockChecksums[pair[0]] = pair[1] }
        table.validatedAt = encoded.validatedAt
        // Passed on as response headers: held to what the HTTP source accepts from an origin
        // (a table on disk is input too).
        table.attributes = ResourceAttributes(contentType: encoded.contentType.flatMap(HTTPByteSource.passable),
                                              lastModified: encoded.lastModified.flatMap(HTTPByteSource.passable))
        guard table.version == formatVersion, !checksummed || encoded.checksum == table.computedChecksum() else {
            throw MP4Error(.malformed, "cache table \(path) fails its checksum")
        }
        guard encoded.ranges.count == set.ranges.count, pairs.count == set.ranges.count, (set.ranges.last?.upperBound ?? 0) <= table.length else {
            throw MP4Error(.malformed, "cache table \(path) lists ranges that are overlapping or outside the resource")
        }
        // Block checksums only for blocks of the resource that the table says are present.
        guard (encoded.blocks ?? []).allSatisfy({ $0.count == 2 }), table.checksumsArePresentBlocks else {
            throw MP4Error(.malformed, "cache table \(path) has checksums for blocks that are not present")
        }
        return table
    }

    /// Writes the table atomically: temporary file, flush, rename (``AtomicFileWriter``).
    /// `.durable` (a new or reset entry, whose earlier table may claim bytes the data file no
    /// longer holds) flushes the directory too; `.ordered` (a commit, which only adds claims
    /// to the same generation, so the earlier table is right as well) does not.
    /// Returns the file's image: its bytes, and the table, when reading them back would give
    /// this table (``loadImage(_:known:)``); otherwise (never, for tables this code makes) the
    /// next load decodes them.
    @discardableResult
    func write(to path: String, _ purpose: Platform.SyncPurpose = .durable) throws -> FileImage? {
        let bytes = encoded()
        let writer = try AtomicFileWriter(destination: path, permissions: 0o600)
        try writer.write(bytes, at: 0)
        try writer.commit(purpose)
        return readsBackAsItself ? FileImage(bytes: bytes, table: self) : nil
    }

    /// The file's bytes: the JSON of ``Encoded`` (keys sorted, absent values left out),
    /// written here rather than by `JSONEncoder` (5 % of the proxy's CPU while a fragmented
    /// film's heads were walked, a commit every 10 ms). `JSONDecoder` reads it
    /// (`CacheTableTests`).
    func encoded() -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(256 + rangeSet.ranges.count * 24 + blockChecksums.count * 28)
        var first = true
        func key(_ name: String) {
            if !first { out.append(UInt8(ascii: ",")) }
            first = false
            out += "\"\(name)\":".utf8
        }
        func number<T: BinaryInteger>(_ value: T) { out += String(value).utf8 }
        let hex = Array("0123456789abcdef".utf8)
        func string(_ value: String) {
            out.append(UInt8(ascii: "\""))
            for byte in value.utf8 {
                switch byte {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"): out += [UInt8(ascii: "\\"), byte]
                case 0..<0x20:
                    out += "\\u00".utf8
                    out += [hex[Int(byte >> 4)], hex[Int(byte & 0xF)]]
                default: out.append(byte)
                }
            }
            out.append(UInt8(ascii: "\""))
        }
        func pairs(_ values: [(UInt64, UInt64)]) {
            out.append(UInt8(ascii: "["))
            for (index, pair) in values.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                out.append(UInt8(ascii: "["))
                number(pair.0)
                out.append(UInt8(ascii: ","))
                number(pair.1)
                out.append(UInt8(ascii: "]"))
            }
            out.append(UInt8(ascii: "]"))
        }
        out.append(UInt8(ascii: "{"))
        if !blockChecksums.isEmpty { key("blocks"); pairs(blockChecksums.keys.sorted().map { ($0, blockChecksums[$0] ?? 0) }) }
        key("checksum"); string(computedChecksum())
        if let type = attributes.contentType { key("contentType"); string(type) }
        if let generation { key("generation"); string(generation) }
        if let modified = attributes.lastModified { key("lastModified"); string(modified) }
        key("length"); number(length)
        key("ranges"); pairs(rangeSet.ranges.map { ($0.lowerBound, $0.upperBound) })
        key("resource"); string(resource)
        if let validatedAt { key("validatedAt"); number(validatedAt) }
        if let validator { key("validator"); string(validator) }
        key("version"); number(version)
        out.append(UInt8(ascii: "}"))
        return out
    }

    /// Whether ``decode(_:path:checksummed:)`` of ``encoded()`` gives this table back: what
    /// decoding checks and normalizes (the version, ranges within the length, checksums only
    /// of present blocks, attributes a response may carry) already holds.
    var readsBackAsItself: Bool {
        version == Self.formatVersion
            && (rangeSet.ranges.last?.upperBound ?? 0) <= length
            && checksumsArePresentBlocks
            && attributes.contentType.flatMap(HTTPByteSource.passable) == attributes.contentType
            && attributes.lastModified.flatMap(HTTPByteSource.passable) == attributes.lastModified
    }
}
