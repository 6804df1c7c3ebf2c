import Foundation
import Testing
@testable import MP4IO

/// HTTP/1.1 heads and framing as the client (and later the server) parses them: well-formed,
/// tolerated and hostile forms.
@Suite struct HTTPMessageTests {
    static func bytes(_ text: String) -> ArraySlice<UInt8> { Array(text.utf8)[...] }

    @Test func headEndsAtTheEmptyLineWithCRLFOrBareLF() {
        #expect(HTTPMessage.headEnd(Self.bytes("HTTP/1.1 200 OK\r\nA: b\r\n\r\nBODY")) == 25)
        #expect(HTTPMessage.headEnd(Self.bytes("HTTP/1.1 200 OK\nA: b\n\nBODY")) == 22)
        #expect(HTTPMessage.headEnd(Self.bytes("HTTP/1.1 200 OK\r\nA: b\r\n\r")) == nil)
        #expect(HTTPMessage.headEnd(Self.bytes("HTTP/1.1 200 OK\r\nA: b\r\n")) == nil)
        #expect(HTTPMessage.headEnd(Self.bytes("")) == nil)
        // A slice that does not start at 0 (the connection's buffer after consumed bytes).
        let buffer = Array("xxxxHTTP/1.1 204 No Content\r\n\r\n".utf8)
        #expect(HTTPMessage.headEnd(buffer[4...]) == buffer.count)
        // Resuming a scan: the empty line straddling the previously scanned end is found.
        let head = Array("HTTP/1.1 200 OK\r\nA: b\r\n\r\n".utf8)
        for scanned in 0...head.count {
            #expect(HTTPMessage.headEnd(head[...], scanned: scanned) == head.count, "scanned \(scanned)")
        }
        let lf = Array("HTTP/1.1 200 OK\nA: b\n\n".utf8)
        for scanned in 0...lf.count { #expect(HTTPMessage.headEnd(lf[...], scanned: scanned) == lf.count) }
    }

    @Test func parsesStatusLineAndFields() throws {
        let head = try HTTPMessage.parseHead(Self.bytes("HTTP/1.1 206 Partial Content\r\nContent-Range:  bytes 0-9/100 \r\nSet-Cookie: a\r\nset-cookie: b\r\nX-Empty:\r\n\r\n"))
        #expect(head.startLine.0 == "HTTP/1.1" && head.startLine.1 == "206" && head.startLine.2 == "Partial Content")
        #expect(head.fields["content-range"] == "bytes 0-9/100")
        #expect(head.fields["set-cookie"] == "a, b")
        #expect(head.fields["x-empty"] == "")
        #expect(head.values("SET-COOKIE") == ["a", "b"])
        // A status line without a reason phrase.
        #expect(try HTTPMessage.parseHead(Self.bytes("HTTP/1.1 200\r\n\r\n")).startLine.1 == "200")
    }

    @Test func rejectsMalformedHeads() {
        for text in [
            "\r\n\r\n",                                           // no start line
            "HTTP/1.1\r\n\r\n",                                   // one part
            "HTTP/1.1 200 OK\r\nNo colon here\r\n\r\n",
            "HTTP/1.1 200 OK\r\nA: b\r\n folded\r\n\r\n",          // obsolete line folding
            "HTTP/1.1 200 OK\r\nBad Name: b\r\n\r\n",              // space in the name
            "HTTP/1.1 200 OK\r\n: empty name\r\n\r\n",
            "HTTP/1.1 200 OK\r\nA: b\u{0}c\r\n\r\n",                // NUL in a value
            "HTTP/1.1 200 OK\r\nETag: \"a\rb\"\r\n\r\n",          // bare CR (would go back in If-Range)
            "HTTP/1.1 200\rOK\r\n\r\n",                           // bare CR in the start line
        ] {
            #expect(throws: HTTPMessage.Malformed.self, "\(text.debugDescription)") { try HTTPMessage.parseHead(Self.bytes(text)) }
        }
        let many = "HTTP/1.1 200 OK\r\n" + (0...HTTPMessage.maxFieldCount).map { "X-\($0): v\r\n" }.joined() + "\r\n"
        #expect(throws: HTTPMessage.Malformed.self) { try HTTPMessage.parseHead(Self.bytes(many)) }
        let long = "HTTP/1.1 200 OK\r\nX: " + String(repeating: "v", count: HTTPMessage.maxHeadSize) + "\r\n\r\n"
        #expect(throws: HTTPMessage.Malformed.self) { try HTTPMessage.parseHead(Self.bytes(long)) }
    }

    @Test func framingFollowsRFC9112() throws {
        func framing(_ status: Int, _ fields: String) throws -> HTTPMessage.Framing {
            try HTTPMessage.responseFraming(status: status, head: HTTPMessage.parseHead(Self.bytes("HTTP/1.1 \(status) X\r\n\(fields)\r\n")))
        }
        #expect(try framing(200, "Content-Length: 42\r\n") == .length(42))
        #expect(try framing(200, "Content-Length: 42\r\nContent-Length: 42\r\n") == .length(42))
        #expect(try framing(200, "Transfer-Encoding: chunked\r\nContent-Length: 42\r\n") == .chunked)  // TE wins
        #expect(try framing(200, "Transfer-Encoding: gzip, chunked\r\n") == .chunked)
        #expect(try framing(200, "Transfer-Encoding: chunked, gzip\r\n") == .untilClose)
        #expect(try framing(200, "") == .untilClose)
        #expect(try framing(204, "Content-Length: 42\r\n") == .none)
        #expect(try framing(304, "") == .none)
        for bad in ["Content-Length: 42\r\nContent-Length: 43\r\n", "Content-Length: -1\r\n", "Content-Length: 12abc\r\n",
                    "Content-Length: \r\n", "Content-Length: 99999999999999999999999\r\n", "Content-Length: +5\r\n"] {
            #expect(throws: HTTPMessage.Malformed.self, "\(bad.debugDescription)") { try framing(200, bad) }
        }
    }

    @Test func chunkSizes() throws {
        #expect(try HTTPMessage.chunkSize(Self.bytes("1a3F")) == 0x1a3f)
        #expect(try HTTPMessage.chunkSize(Self.bytes("10;name=\"value\"")) == 16)
        #expect(try HTTPMessage.chunkSize(Self.bytes("0")) == 0)
        #expect(try HTTPMessage.chunkSize(Self.bytes("fffffffffffffff")) == 0xfff_ffff_ffff_ffff)
        for bad in ["", ";ext", "g", "-1", "1 0x", "ffffffffffffffff", "0x10"] {
            #expect(throws: HTTPMessage.Malformed.self, "\(bad)") { try HTTPMessage.chunkSize(Self.bytes(bad)) }
        }
    }

    @Test func headerValuesThatWouldInjectAreInvalid() {
        #expect(HTTPRequest.isValidHeaderValue("Bearer abc"))
        #expect(!HTTPRequest.isValidHeaderValue("a\r\nX-Injected: 1"))
        #expect(!HTTPRequest.isValidHeaderValue("a\nb"))
        #expect(!HTTPRequest.isValidHeaderValue("a\u{0}"))
        #expect(HTTPRequest.isValidHeaderName("X-Api-Key"))
        #expect(!HTTPRequest.isValidHeaderName("X Api"))
        #expect(!HTTPRequest.isValidHeaderName("X:Api"))
        #expect(!HTTPRequest.isValidHeaderName(""))
    }

    @Test func sameOriginComparesSchemeHostAndPort() throws {
        func url(_ text: String) throws -> URL { try #require(URL(string: text)) }
        #expect(HTTPRequest.sameOrigin(try url("http://a.example/x"), try url("http://A.example:80/y")))
        #expect(HTTPRequest.sameOrigin(try url("https://a.example/x"), try url("https://a.example:443/y")))
        #expect(!HTTPRequest.sameOrigin(try url("http://a.example/x"), try url("https://a.example/x")))
        #expect(!HTTPRequest.sameOrigin(try url("http://a.example/x"), try url("http://b.example/x")))
        #expect(!HTTPRequest.sameOrigin(try url("http://127.0.0.1:8080/x"), try url("http://127.0.0.1:8081/x")))
        #expect(!HTTPRequest.sameOrigin(try url("http://127.0.0.1:8080/x"), try url("http://localhost:8080/x")))
    }
}

/// The one header type of the client and the server.
@Suite struct HTTPFieldsTests {
    @Test func namesAnyCaseRepeatedJoinedOrderKept() {
        var fields: HTTPFields = [("Content-Type", "video/mp4"), ("Set-Cookie", "a"), ("set-cookie", "b")]
        #expect(fields["content-type"] == "video/mp4" && fields["CONTENT-TYPE"] == "video/mp4")
        #expect(fields["Set-Cookie"] == "a, b" && fields.values("SET-COOKIE") == ["a", "b"])
        #expect(fields["x-missing"] == nil && !fields.contains("x-missing") && fields.contains("set-COOKIE"))
        fields.append(("Authorization", "secret"))
        #expect(fields.map(\.name) == ["Content-Type", "Set-Cookie", "set-cookie", "Authorization"])
        #expect(fields.removing(["authorization", "set-cookie"]).map(\.name) == ["Content-Type"])
        fields.remove("set-cookie")
        #expect(fields.count == 2)
        // Names are tokens: only ASCII letters fold (a "-" is not "\r" and "[" is not "{").
        #expect(!HTTPFields.same("a-b", "a\rb") && !HTTPFields.same("[", "{") && HTTPFields.same("X-Y", "x-y"))
    }

    /// `Connection` is a list of tokens: `close` is found in any case and place, a longer
    /// word that holds it is not `close`; values are trimmed of spaces and tabs only.
    @Test func connectionTokensAndTrimming() {
        #expect("close".hasToken("close") && "Keep-Alive, CLOSE".hasToken("close") && " te,\tclose ".hasToken("close"))
        #expect(!"closed".hasToken("close") && !"keep-alive".hasToken("close") && !"".hasToken("close"))
        #expect("upgrade, keep-alive".hasToken("keep-alive"))
        #expect(" \t a b \t".trimmingSpaces() == "a b" && "\u{A0}x".trimmingSpaces() == "\u{A0}x")
    }
}
