import Testing
@testable import MP4Core

@Suite struct ByteReaderTests {
    @Test func readsBigEndianAndStopsAtTheEnd() throws {
        var r = ByteReader([0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0xFF], baseOffset: 1000)
        #expect(try r.readUInt16() == 0x0102)
        #expect(try r.readUInt24() == 0x030405)
        #expect(r.fileOffset == 1005)
        do {
            _ = try r.readUInt64()
            Issue.record("read past the end")
        } catch let e as MP4Error {
            #expect(e.kind == .truncated && e.offset == 1005)
        }
        #expect(r.remaining == 4)
    }

    @Test func sliceCannotReadItsNeighbour() throws {
        var r = ByteReader([1, 2, 3, 4, 5, 6])
        var inner = try r.slice(count: 2)
        #expect(try inner.readUInt16() == 0x0102)
        #expect(throws: MP4Error.self) { try inner.readUInt8() }
        #expect(try r.readUInt8() == 3)
    }

    @Test func entryCountsArePaidForInBytes() throws {
        let r = ByteReader([UInt8](repeating: 0, count: 48))
        #expect(try r.requireEntries(4, of: 12, "stsc") == 4)
        #expect(throws: MP4Error.self) { try r.requireEntries(5, of: 12, "stsc") }
        #expect(throws: MP4Error.self) { try r.requireEntries(UInt64.max, of: 8, "co64") }
        #expect(throws: MP4Error.self) { try r.requireEntries(UInt64(1) << 62, of: 8, "co64") }
    }

    @Test func cStringWithoutTerminatorEndsAtTheBox() {
        var r = ByteReader(Array("abc".utf8))
        #expect(r.readCString() == "abc" && r.isAtEnd)
    }

    /// The one variable-width big-endian read (iloc, tfra, saio, data, relocations).
    @Test func variableWidthReads() throws {
        let bytes: [UInt8] = [0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09]
        for width in 0...8 {
            var r = ByteReader(bytes)
            let expected = bytes.prefix(width).reduce(UInt64(0)) { $0 * 256 + UInt64($1) }
            #expect(try r.readUInt(width: width) == expected, "width \(width)")
            #expect(UInt64(bigEndian: bytes.prefix(width)) == expected)
        }
        var r = ByteReader(bytes)
        #expect(throws: MP4Error.self) { try r.readUInt(width: 9) }
        var short = ByteReader([1, 2, 3])
        #expect(throws: MP4Error.self) { try short.readUInt(width: 4) }
        #expect(try short.readUInt(width: 3) == 0x010203 && short.isAtEnd)
    }
}

