import Foundation
import Testing
@testable import MP4Core
@testable import MP4IO
import MP4TestSupport

/// Request bodies, for the methods a server takes them for (the proxy's `POST _/preload`):
/// framed by Content-Length, bounded in size and time, refused everywhere else.
@Suite struct HTTPServerBodyTests {
    static func server(maxBody: Int = 1000, headTimeout: TimeInterval = 10) throws -> HTTPServer {
        var options = HTTPServer.Options()
        options.methodsWithBodies = ["POST"]
        options.maxRequestBody = maxBody
        options.headTimeout = headTimeout
        let server = HTTPServer(options: options) { request in
            .text(200, "\(request.method) \(request.body.count) \(String(decoding: request.body, as: UTF8.self))")
        }
        try server.start()
        return server
    }

    static func post(_ port: Int, _ body: String, extra: String = "") async throws -> HTTPServerTests.Exchange {
        try await HTTPServerTests.exchange(port, "POST /_/preload HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nContent-Length: \(body.utf8.count)\r\nConnection: close\r\n\(extra)\r\n\(body)")
    }

    @Test func aBodyWithinTheBoundReachesTheHandlerWhole() async throws {
        let server = try Self.server()
        defer { server.stop() }
        let answer = try await Self.post(server.port, #"{"urls": ["https://o/v.mp4"], "seconds": 3}"#)
        #expect(answer.status == 200)
        #expect(String(decoding: answer.body, as: UTF8.self) == "POST 43 {\"urls\": [\"https://o/v.mp4\"], \"seconds\": 3}\n")
    }

    /// A connection's buffer starts small (16 KiB) and grows: a head and a body of many times
    /// that, within the bounds, arrive whole; one byte more than the buffer holds is refused.
    @Test func aLargeHeadAndBodyGrowTheConnectionsBuffer() async throws {
        let limit = RequestDecision.maxBody(HTTPServer.Options())
        let server = try Self.server(maxBody: limit)
        defer { server.stop() }
        let body = String(repeating: "b", count: limit)
        let header = "X-Long: " + String(repeating: "h", count: 40_000) + "\r\n"
        let answer = try await Self.post(server.port, body, extra: header)
        #expect(answer.status == 200)
        #expect(answer.body.count == "POST \(limit) ".utf8.count + limit + 1)
        #expect(try await Self.post(server.port, body + "b").status == 413)
    }

    @Test func bodiesOverTheBoundOrUnframedOrNotTakenAreRefused() async throws {
        let server = try Self.server(maxBody: 10)
        defer { server.stop() }
        let port = server.port
        #expect(try await Self.post(port, String(repeating: "x", count: 11)).status == 413)
        let chunked = try await HTTPServerTests.exchange(port, "POST /x HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n5\r\nhello\r\n0\r\n\r\n")
        #expect(chunked.status == 411)
        let malformed = try await HTTPServerTests.exchange(port, "POST /x HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nContent-Length: -1\r\nConnection: close\r\n\r\n")
        #expect(malformed.status == 400)
        let huge = try await HTTPServerTests.exchange(port, "POST /x HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nContent-Length: 99999999999999999999\r\nConnection: close\r\n\r\n")
        #expect(huge.status == 400)
        // GET takes no body here, and a method not named is 405 with what is allowed.
        let getWithBody = try await HTTPServerTests.exchange(port, "GET /x HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nContent-Length: 3\r\nConnection: close\r\n\r\nabc")
        #expect(getWithBody.status == 400)
        let put = try await HTTPServerTests.exchange(port, "PUT /x HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\n\r\n")
        #expect(put.status == 405)
        #expect(put.headers["allow"] == "GET, HEAD, POST")
    }

    /// A client that sends all of a body over the bound before it reads (as most HTTP
    /// libraries do without `Expect: 100-continue`) gets the 413, and a method that takes no
    /// body its 400: the server reads and drops what still comes before it closes. Closed with 10 MB
    /// unread, the socket was reset and the client saw "connection reset" and no status.
    @Test(arguments: ["POST", "PUT"])
    func aRefusedBodySentWholeStillGetsItsStatus(_ method: String) async throws {
        let server = try Self.server(maxBody: 64 << 10)
        defer { server.stop() }
        let port = server.port
        let request = Array("\(method) /_/preload HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nContent-Length: 10000000\r\n\r\n".utf8) + [UInt8](repeating: 120, count: 10_000_000)
        // As such a client does: every byte sent (a failed send ends the exchange), then read.
        let (sentAll, answer) = try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<(Bool, [UInt8]), any Error>) in
            Thread {
                continuation.resume(with: Result {
                    guard let fd = connectLoopback(port) else { throw MP4Error(.io, "connect failed") }
                    defer { close(fd) }
                    var timeout = timeval(tv_sec: 30, tv_usec: 0)
                    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
                    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
                    var offset = 0
                    while offset < request.count {
                        let n = sendWithoutSignal(fd, request[offset...])
                        guard n > 0 else { return (false, []) }
                        offset += n
                    }
                    var received: [UInt8] = [], buffer = [UInt8](repeating: 0, count: 4096)
                    while true {
                        let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                        if n <= 0 { break }
                        received += buffer[0..<n]
                    }
                    return (true, received)
                })
            }.start()
        }
        #expect(sentAll, "the server reset the connection while the body was sent")
        let status = method == "POST" ? "413" : "400"
        #expect(String(decoding: answer.prefix(12), as: UTF8.self) == "HTTP/1.1 \(status)", "\(String(decoding: answer.prefix(40), as: UTF8.self))")
    }

    /// A body that never completes holds its connection no longer than a head may.
    @Test func aBodyThatNeverCompletesIsCutAtTheHeadDeadline() async throws {
        let server = try Self.server(headTimeout: 1)
        defer { server.stop() }
        let port = server.port
        let seconds = await Executables.offPool { () -> Double in
            guard let fd = connectLoopback(port) else { return -1 }
            defer { close(fd) }
            var timeout = timeval(tv_sec: 20, tv_usec: 0)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            let start = Date()
            let request = Array("POST /x HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nContent-Length: 100\r\n\r\nonly part".utf8)
            _ = request.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            var buffer = [UInt8](repeating: 0, count: 1024)
            while buffer.withUnsafeMutableBytes({ recv(fd, $0.baseAddress, $0.count, 0) }) > 0 {}
            return Date().timeIntervalSince(start)
        }
        #expect(seconds >= 0.5 && seconds < 10, "the connection was closed after \(seconds) s")
    }
}
