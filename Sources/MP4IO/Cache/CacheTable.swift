import Foundation
import MP4Core

/// The persisted description of one cache entry: which resource, its length and validator, and
/// the byte ranges present in the entry's sparse data file. Written atomically (temporary file,
/// fsync, rename) and checksummed, so a torn or corrupt table is detected and discarded, never
/// trusted.
struct CacheTable: Codable, Equatable {
    static let formatVersion = 1

    var version: Int = CacheTable.formatVersion
    /// The resource (URL or path).
    var resource: String
    /// Its total length.
    var length: UInt64
    /// Its validator when the entry was filled (ETag, Last-Modified, size+mtime).
    var validator: String?
    /// Present ranges as `[start, end)` pairs.
    var ranges: [[UInt64]]
    /// FNV-1a of everything above, as hex.
    var checksum: String = ""

    var rangeSet: ByteRangeSet {
        get { ByteRangeSet(ranges.compactMap { $0.count == 2 && $0[0] < $0[1] ? $0[0]..<$0[1] : nil }) }
        set { ranges = newValue.ranges.map { [$0.lowerBound, $0.upperBound] } }
    }

    /// 64-bit FNV-1a.
    static func fnv1a(_ bytes: some Sequence<UInt8>) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in bytes { hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01B3 }
        return hash
    }

    func computedChecksum() -> String {
        let text = "\(version)|\(resource)|\(length)|\(validator ?? "-")|" + ranges.map { $0.map(String.init).joined(separator: "-") }.joined(separator: ",")
        return String(Self.fnv1a(text.utf8), radix: 16)
    }

    /// Reads the table at `path`. `nil` when there is none; throws when it exists but is torn,
    /// corrupt, from another format, or inconsistent (ranges outside the length, overlapping).
    static func load(_ path: String) throws -> CacheTable? {
        guard let data = FileManager.default.contents(atPath: path) else { return nil }
        guard let table = try? JSONDecoder().decode(CacheTable.self, from: data) else {
            throw MP4Error(.malformed, "cache table \(path) is not readable (torn or corrupt)")
        }
        guard table.version == formatVersion, table.checksum == table.computedChecksum() else {
            throw MP4Error(.malformed, "cache table \(path) fails its checksum")
        }
        let set = ByteRangeSet(table.ranges.compactMap { $0.count == 2 && $0[0] < $0[1] ? $0[0]..<$0[1] : nil })
        guard table.ranges.count == set.ranges.count, set.isWellFormed, (set.ranges.last?.upperBound ?? 0) <= table.length else {
            throw MP4Error(.malformed, "cache table \(path) lists ranges that are overlapping or outside the resource")
        }
        return table
    }

    /// Writes the table atomically: temporary file, fsync, rename, directory fsync.
    func write(to path: String) throws {
        var table = self
        table.checksum = computedChecksum()
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let data = try encoder.encode(table)
        let writer = try AtomicFileWriter(destination: path, permissions: 0o644)
        try writer.write(Array(data), at: 0)
        try writer.commit()
    }
}
