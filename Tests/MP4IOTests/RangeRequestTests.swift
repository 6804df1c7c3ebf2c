import Testing
@testable import MP4IO

/// A player's `Range` header, read as RFC 9110 §14 says a server may: one range, in any case
/// of the unit, with optional spaces; anything else is the whole entity, never a garbled part.
@Suite struct RangeRequestTests {
    @Test func oneRangeInItsForms() {
        #expect(RangeRequest.parse(nil, length: 100) == .whole)
        #expect(RangeRequest.parse("bytes=10-19", length: 100) == .partial(10..<20))
        #expect(RangeRequest.parse("bytes=10-", length: 100) == .partial(10..<100))
        #expect(RangeRequest.parse("bytes=-30", length: 100) == .partial(70..<100))
        #expect(RangeRequest.parse("bytes=-300", length: 100) == .partial(0..<100), "a suffix longer than the entity: all of it")
        #expect(RangeRequest.parse("bytes=90-500", length: 100) == .partial(90..<100), "an end past the entity: to its end")
        #expect(RangeRequest.parse(" Bytes=10 - 19 ", length: 100) == .partial(10..<20))
        #expect(RangeRequest.parse("BYTES=0-0", length: 100) == .partial(0..<1))
        #expect(RangeRequest.parse("bytes=0-18446744073709551615", length: 100) == .partial(0..<100))
    }

    @Test func whatIsNotOneSatisfiableRange() {
        #expect(RangeRequest.parse("bytes=100-", length: 100) == .unsatisfiable)
        #expect(RangeRequest.parse("bytes=-0", length: 100) == .unsatisfiable)
        #expect(RangeRequest.parse("bytes=-5", length: 0) == .unsatisfiable)
        for whole in ["items=0-1", "bytes 0-1", "byte=0-1", "bytes=0-1,5-6", "bytes=5-1", "bytes=a-1", "bytes=-", "bytes=1-2-3",
                      "bytes=+1-2", "bytes=000000000000000000001-2", "bytes=18446744073709551616-", "bytes=", ""] {
            #expect(RangeRequest.parse(whole, length: 100) == .whole, "\(whole)")
        }
    }
}
