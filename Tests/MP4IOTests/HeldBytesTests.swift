import Testing
import MP4Core
@testable import MP4IO

/// ``HeldBytes``: the held range from memory, anything else from the base source.
@Suite struct HeldBytesTests {
    /// A base that counts the bytes it is asked for.
    final class Counting: ByteSource, @unchecked Sendable {
        let bytes: [UInt8]
        var asked: [Range<UInt64>] = []
        init(_ bytes: [UInt8]) { self.bytes = bytes }
        var name: String { "counting" }
        func length() async throws -> UInt64 { UInt64(bytes.count) }
        func read(_ range: Range<UInt64>) async throws -> [UInt8] {
            asked.append(range)
            return Array(bytes[Int(range.lowerBound)..<Int(range.upperBound)])
        }
    }

    @Test func theHeldRangeComesFromMemoryTheRestFromTheBase() async throws {
        let film = (0..<200).map { UInt8($0) }
        let base = Counting(film)
        var held = Array(film[50..<80])
        held[0] = 255   // tells the held bytes from the base's
        let source = HeldBytes(base: base, bytes: held, at: 50)
        #expect(try await source.read(50..<80) == held)
        #expect(try await source.read(55..<60) == Array(film[55..<60]))
        #expect(base.asked.isEmpty, "the held range asked the base")
        var pieces: [[UInt8]] = []
        try await source.read(40..<90) { pieces.append(Array($0)) }
        #expect(pieces.joined().elementsEqual(film[40..<50] + held + film[80..<90]))
        #expect(base.asked == [40..<50, 80..<90])
        base.asked = []
        #expect(try await source.read(100..<120) == Array(film[100..<120]))
        #expect(base.asked == [100..<120])
        #expect(try await source.length() == 200)
    }
}
