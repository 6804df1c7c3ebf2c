import Foundation
import Testing
@testable import MP4IO
import MP4TestSupport

/// `serve --access-log` (issue 46 item 2): one line a request, the secret and the origin's
/// query never written, a client's bytes unable to forge a line.
@Suite struct AccessLogTests {
    static let secret = "abc123secret"

    static func exchange(target: String?, range: String? = nil, status: Int = 206, failure: String? = nil) -> HTTPServer.Exchange {
        HTTPServer.Exchange(start: Date(timeIntervalSince1970: 1_795_700_000), method: target == nil ? nil : "GET", target: target, range: range,
                            status: status, bytesSent: 1024, seconds: 0.25, failure: failure)
    }

    @Test func aLineSaysWhatWasAskedAndAnsweredWithoutTheSecretOrTheOriginsQuery() {
        let target = "/\(Self.secret)/v.mp4?url=https%3A%2F%2Fcdn.example.com%3A8443%2Fpath%2Fv.mp4%3Ftoken%3DSIGNED&faststart=1"
        let line = AccessLog.line(Self.exchange(target: target, range: "bytes=0-1023"), secret: Self.secret)
        #expect(line == "127.0.0.1 - - [26/Nov/2026:13:33:20 +0000] \"GET /…/v.mp4 HTTP/1.1\" 206 1024 \"bytes=0-1023\" 0.250 origin=https://cdn.example.com:8443")
        #expect(!line.contains(Self.secret) && !line.contains("SIGNED") && !line.contains("path"))
    }

    @Test func refusalsCarryTheirReasonAndUnreadableHeadsADash() {
        let refused = AccessLog.line(Self.exchange(target: "/\(Self.secret)/", status: 400, failure: "missing ?url=ORIGIN"), secret: Self.secret)
        #expect(refused.hasSuffix("\"GET /…/ HTTP/1.1\" 400 1024 \"-\" 0.250 \"missing ?url=ORIGIN\""), "\(refused)")
        let malformed = AccessLog.line(Self.exchange(target: nil, status: 431), secret: Self.secret)
        #expect(malformed.contains("\"-\" 431 1024 \"-\""), "\(malformed)")
    }

    /// Quotes, backslashes, line breaks and other bytes a client sends are escaped: one
    /// request, one line, its fields where they belong.
    @Test func aClientCannotForgeALine() {
        let line = AccessLog.line(Self.exchange(target: "/x\"y\\z\r\n127.0.0.1 fake\u{7}", range: "bytes=0-\"\n"), secret: Self.secret)
        #expect(!line.contains("\n") && !line.contains("\r") && !line.contains("\u{7}"))
        #expect(line.contains("/x\\\"y\\\\z\\x0D\\x0A127.0.0.1 fake\\x07") && line.contains("\"bytes=0-\\\"\\x0A\""), "\(line)")
    }
}
