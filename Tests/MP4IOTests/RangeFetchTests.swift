import Testing
@testable import MP4Core
@testable import MP4IO

/// What the HTTP source does after each response to a range request, row by row
/// (`RangeFetch`: no network), and how long it waits before trying again.
@Suite struct RangeFetchTests {
    typealias R = RangeFetch.Response

    static func after(_ response: R, wanted: Range<UInt64> = 100..<200, learning: Bool = false, length: UInt64? = 1000) -> RangeFetch.Step {
        RangeFetch.after(response, wanted: wanted, learning: learning, knownLength: length, name: "u", maxRedirects: 5)
    }

    static func failure(_ step: RangeFetch.Step) -> MP4Error? {
        if case .fail(let error) = step { return error }
        return nil
    }

    @Test func eachResponseLeadsToItsStep() {
        // 206: complete, cut short, paused.
        #expect(Self.after(R(status: 206, given: 100, expected: 100)) == .done)
        #expect(Self.after(R(status: 206, given: 40, expected: 100)) == .retry(140..<200, why: "the response ended after 40 of 100 bytes", retryAfter: nil))
        #expect(Self.after(R(status: 206, given: 40, expected: 100, paused: true)) == .next(140..<200))
        #expect(Self.after(R(status: 206, given: 0, expected: 100, paused: true)) == .retry(100..<200, why: "the response ended after 0 of 100 bytes", retryAfter: nil))
        #expect(Self.after(R(status: 206, given: 5, expected: 100), learning: true) == .done)   // the head: whatever came
        // 200: the whole file from 0.
        #expect(Self.after(R(status: 200, given: 100, expected: 100, skipped: 100)) == .done)
        #expect(Self.after(R(status: 200, given: 50, expected: 100, skipped: 100)) == .retry(150..<200, why: "the response ended after 150 bytes", retryAfter: nil))
        #expect(Self.after(R(status: 200, given: 50, expected: 100, skipped: 10)) == .retry(100..<200, why: "the response ended after 10 bytes", retryAfter: nil))
        #expect(Self.after(R(status: 200, given: 50, expected: 100, skipped: 100, paused: true)) == .next(150..<200))
        #expect(Self.after(R(status: 200, given: 700, expected: 700), wanted: 0..<65536, learning: true, length: nil) == .learnedWhole(length: 700))
        #expect(Self.failure(Self.after(R(status: 200, given: 700, expected: 700, complete: false), wanted: 0..<65536, learning: true, length: nil))?.message.contains("does not say how long") == true)
        // 416: an empty file when learning, a changed one otherwise.
        #expect(Self.after(R(status: 416, given: 0, expected: 0, contentRange: "bytes */0"), learning: true, length: nil) == .empty)
        #expect(Self.failure(Self.after(R(status: 416, given: 0, expected: 0, contentRange: "bytes */99"), learning: true, length: nil)) != nil)
        #expect(Self.failure(Self.after(R(status: 416, given: 0, expected: 0)))?.cause == .sourceChanged)
        // Retried, with the server's Retry-After; refused with the reason.
        #expect(Self.after(R(status: 503, given: 0, expected: 0, retryAfter: " 2 ")) == .retry(100..<200, why: "HTTP 503", retryAfter: 2))
        #expect(Self.after(R(status: 429, given: 0, expected: 0)) == .retry(100..<200, why: "HTTP 429", retryAfter: nil))
        #expect(Self.failure(Self.after(R(status: 302, given: 0, expected: 0, location: "file:///etc/passwd")))?.cause == .refused(status: 302))
        #expect(Self.failure(Self.after(R(status: 404, given: 0, expected: 0)))?.message == "u: HTTP 404 (not found)")
        #expect(Self.failure(Self.after(R(status: 403, given: 0, expected: 0)))?.message.contains("Authorization") == true)
    }

    @Test func waitsAreBoundedWhateverTheServerSays() {
        var options = HTTPByteSource.Options()
        options.retryDelay = 0.5
        options.maxRetryAfter = 30
        #expect(RangeFetch.wait(attempt: 1, retryAfter: nil, options: options) == 0.5)
        #expect(RangeFetch.wait(attempt: 3, retryAfter: nil, options: options) == 2)
        #expect(RangeFetch.wait(attempt: 200, retryAfter: nil, options: options) == 30)
        #expect(RangeFetch.wait(attempt: 1, retryAfter: 7, options: options) == 7)
        #expect(RangeFetch.wait(attempt: 1, retryAfter: -5, options: options) == 0)
        #expect(RangeFetch.wait(attempt: 1, retryAfter: .nan, options: options) == 0.5)
        #expect(RangeFetch.wait(attempt: 1, retryAfter: 1e300, options: options) == 30)
    }
}
