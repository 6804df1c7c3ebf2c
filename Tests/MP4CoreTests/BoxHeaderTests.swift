import Testing
@testable import MP4Core
import MP4TestSupport

@Suite struct BoxHeaderTests {
    typealias B = BoxBuilder

    @Test func compactSize() throws {
        let h = try BoxHeader.parse(B.box("free", [1, 2, 3])[...], at: 100, containerEnd: 1000)
        #expect(h.type == .free && h.size == 11 && h.headerSize == 8 && h.offset == 100 && !h.usesLargeSize)
        #expect(h.payloadOffset == 108 && h.endOffset == 111)
    }

    @Test func largeSize() throws {
        let h = try BoxHeader.parse(B.largeBox("mdat", [0, 0, 0, 0])[...], at: 0, containerEnd: 100)
        #expect(h.usesLargeSize && h.headerSize == 16 && h.size == 20)
    }

    @Test func largeSizeThatFitsIn32BitsIsLegal() throws {
        let h = try BoxHeader.parse((B.u32(1) + Array("mdat".utf8) + B.u64(16))[...], at: 0, containerEnd: 16)
        #expect(h.size == 16 && h.usesLargeSize)
    }

    @Test func largeSizeBelowSixteenIsMalformed() {
        #expect(throws: MP4Error.self) { try BoxHeader.parse((B.u32(1) + Array("mdat".utf8) + B.u64(15))[...], at: 0, containerEnd: 100) }
        do {
            _ = try BoxHeader.parse((B.u32(1) + Array("mdat".utf8) + B.u64(8))[...], at: 40, containerEnd: 100)
        } catch let error as MP4Error {
            #expect(error.kind == .malformed && error.offset == 40)
        } catch { Issue.record("wrong error \(error)") }
    }

    @Test func sizeZeroRunsToContainerEnd() throws {
        let h = try BoxHeader.parse((B.u32(0) + Array("mdat".utf8))[...], at: 50, containerEnd: 1050)
        #expect(h.extendsToEnd && h.size == 1000)
    }

    @Test func sizeBelowHeaderIsMalformed() {
        for size: UInt32 in [2, 3, 7] {
            #expect(throws: MP4Error.self) { try BoxHeader.parse((B.u32(size) + Array("free".utf8))[...], at: 0, containerEnd: 100) }
        }
    }

    @Test func truncatedHeaderIsTruncated() {
        do {
            _ = try BoxHeader.parse([0, 0, 0, 16, 0x6D][...], at: 7, containerEnd: 12)
            Issue.record("expected an error")
        } catch let error as MP4Error {
            #expect(error.kind == .truncated && error.offset == 7)
        } catch { Issue.record("wrong error \(error)") }
        #expect(throws: MP4Error.self) { try BoxHeader.parse((B.u32(1) + Array("mdat".utf8) + [0, 0])[...], at: 0, containerEnd: 100) }
    }

    @Test func uuidUserTypeFollowsTheSize() throws {
        let user: [UInt8] = Array(0..<16)
        let plain = try BoxHeader.parse((B.u32(8 + 16 + 2) + Array("uuid".utf8) + user + [9, 9])[...], at: 0, containerEnd: 100)
        #expect(plain.headerSize == 24 && plain.userType == user && plain.userTypeString == "00010203-0405-0607-0809-0a0b0c0d0e0f")
        let large = try BoxHeader.parse((B.u32(1) + Array("uuid".utf8) + B.u64(32) + user)[...], at: 0, containerEnd: 100)
        #expect(large.headerSize == 32 && large.userType == user)
        #expect(throws: MP4Error.self) { try BoxHeader.parse((B.u32(24) + Array("uuid".utf8) + [1, 2, 3])[...], at: 0, containerEnd: 100) }
    }

    @Test func fourCCPrintsReadablyOrAsHex() {
        #expect(FourCC(String("moov"))?.description == "moov")
        #expect(FourCC(rawValue: 0x6461_7401).description == "0x64617401")
        #expect(FourCC(rawValue: 0xA96E_616D).description == "©nam")
        #expect(FourCC(String("toolong")) == nil)
    }
}
