import Foundation
import Testing
@testable import MP4Core
@testable import MP4IO
import MP4TestSupport

/// The table file's own encoding (`CacheTable.encoded`, written without `JSONEncoder`) and the
/// read back of the bytes a process last wrote (`CacheTable.loadImage(_:known:)`, not decoded
/// again). More of the table's rules (checksums, traps, sizes) are in `CachedByteSourceTests`.
struct CacheTableTests {
    /// A table with every field, in random forms: resource names with quotes, backslashes,
    /// control characters and non-ASCII text; ranges, block checksums of present blocks,
    /// optional fields present or not.
    static func randomTable(_ generator: inout some RandomNumberGenerator) -> CacheTable {
        let alphabet: [String] = ["a", "/", "\"", "\\", "\n", "\u{1}", "\u{1F}", "é", "字", "😀", " ", "?", "%", "\u{7F}", "\t"]
        let resource = (0..<Int.random(in: 0...40, using: &generator)).map { _ in alphabet.randomElement(using: &generator) ?? "a" }.joined()
        let length = UInt64.random(in: 0...(64 << 20), using: &generator)
        var ranges: [Range<UInt64>] = []
        if length > 0 {
            for _ in 0..<Int.random(in: 0...300, using: &generator) {
                let start = UInt64.random(in: 0..<length, using: &generator)
                ranges.append(start..<min(length, start + UInt64.random(in: 1...(3 << 20), using: &generator)))
            }
        }
        let maybe = { (generator: inout any RandomNumberGenerator) in Bool.random(using: &generator) }
        var any: any RandomNumberGenerator = SystemRandomNumberGenerator()
        var table = CacheTable(resource: resource, length: length, validator: maybe(&any) ? "\"etag-\(resource.count)\"\\" : nil,
                               generation: maybe(&any) ? CacheTable.newGeneration() : nil, rangeSet: ByteRangeSet(ranges))
        let blocks = length / CacheTable.blockSize + (length % CacheTable.blockSize == 0 ? 0 : 1)
        for index in 0..<blocks where table.rangeSet.contains(table.block(index)) && maybe(&any) {
            table.blockChecksums[index] = UInt64.random(in: 0...UInt64.max, using: &generator)
        }
        table.validatedAt = maybe(&any) ? Int64.random(in: Int64.min...Int64.max, using: &generator) : nil
        table.attributes = ResourceAttributes(contentType: maybe(&any) ? "video/mp4; a=\"b\\\\c\"" : nil,
                                              lastModified: maybe(&any) ? "Fri, 27 Nov 2026 10:20:55 GMT" : nil)
        return table
    }

    /// What the table writes, `JSONDecoder` reads back as the same table, and as what it reads
    /// from `JSONEncoder`'s form of the same fields (the form of tables written before).
    @Test func theEncodingReadsBackAsTheTable() throws {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<300 {
            let table = Self.randomTable(&generator)
            #expect(table.readsBackAsItself)
            let decoded = try CacheTable.decode(Data(table.encoded()), path: "t")
            #expect(decoded == table, "\(String(decoding: table.encoded(), as: UTF8.self))")
            let foundation = try JSONSerialization.jsonObject(with: Data(table.encoded())) as? [String: Any]
            #expect(foundation?["resource"] as? String == table.resource)
            #expect((foundation?["ranges"] as? [[UInt64]])?.count == table.rangeSet.ranges.count)
        }
    }

    /// A load whose file holds the bytes last written or read returns that table without
    /// decoding (a different table under the same bytes shows it); other bytes are decoded;
    /// a table that would not read back as itself is not kept as known.
    @Test func theBytesLastWrittenAreNotDecodedAgain() throws {
        let directory = FileSystem.temporaryDirectory("mp4probe-cache-table")
        defer { FileSystem.removeDirectory(directory) }
        let path = directory + "/t.ranges"
        let table = CacheTable(resource: "r", length: 100, validator: "v", rangeSet: ByteRangeSet([0..<10]))
        let image = try #require(try table.write(to: path))
        #expect(try CacheTable.loadImage(path)?.table == table)
        var marked = image
        marked.table.validator = "not decoded"
        #expect(try CacheTable.loadImage(path, known: marked)?.table.validator == "not decoded")
        var other = table
        other.rangeSet.insert(20..<30)
        try other.write(to: path)
        #expect(try CacheTable.loadImage(path, known: marked)?.table == other)
        // Not what the file says once decoded (a type a response may not carry is dropped,
        // and the table then fails its checksum).
        var odd = table
        odd.attributes = ResourceAttributes(contentType: "video/mp4\u{1}", lastModified: nil)
        #expect(try odd.write(to: path) == nil)
        #expect(throws: MP4Error.self) { _ = try CacheTable.load(path) }
    }
}
