import Testing
@testable import MP4Core

/// The writer mirrors the reader: what one writes, the other reads back.
@Suite struct ByteWriterTests {
    @Test func roundTripsThroughTheReader() throws {
        var writer = ByteWriter()
        let box = writer.beginFullBox("co64", version: 1, flags: 0x000203)
        writer.u32(2)
        writer.u64(0x0000_0001_0000_0000)
        writer.u64(42)
        writer.u16(0xBEEF)
        writer.u8(7)
        writer.i32(-5)
        try writer.end(box)
        #expect(writer.count == 8 + 4 + 4 + 16 + 2 + 1 + 4)
        let header = try BoxHeader.parse(writer.bytes[...], at: 0, containerEnd: UInt64(writer.count))
        #expect(header.type == "co64" && header.size == UInt64(writer.count))
        #expect(Array(writer.bytes[8..<12]) == [1, 0, 2, 3])
        #expect(Array(writer.bytes[16..<24]) == [0, 0, 0, 1, 0, 0, 0, 0])
        #expect(Array(writer.bytes[writer.count - 4..<writer.count]) == [0xFF, 0xFF, 0xFF, 0xFB])
        #expect(ByteWriter.bigEndian(0x0102_0304, width: 4) == [1, 2, 3, 4])
        #expect(ByteWriter.bigEndian(0x0102_0304, width: 3) == [2, 3, 4])
    }

    @Test func nestedBoxesGetTheirSizes() throws {
        var writer = ByteWriter()
        let outer = writer.beginBox("moov")
        let inner = writer.beginBox("udta")
        writer.append([1, 2, 3])
        try writer.end(inner)
        try writer.end(outer)
        #expect(writer.bytes == [0, 0, 0, 19] + Array("moov".utf8) + [0, 0, 0, 11] + Array("udta".utf8) + [1, 2, 3])
    }
}
