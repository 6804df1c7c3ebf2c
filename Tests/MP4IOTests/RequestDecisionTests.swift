import Testing
@testable import MP4IO

/// What the server does with a request head, row by row (`RequestDecision`: no sockets).
@Suite struct RequestDecisionTests {
    static let hosts: Set<String> = ["127.0.0.1:8080", "localhost:8080"]

    static func decide(_ method: String = "GET", _ version: String = "HTTP/1.1", _ fields: [String: String] = ["host": "127.0.0.1:8080"],
                       bodies: Set<String> = []) -> RequestDecision {
        var options = HTTPServer.Options()
        options.methodsWithBodies = bodies
        return RequestDecision.decide(method: method, version: version, fields: HTTPFields(fields.sorted { $0.key < $1.key }.map { (name: $0.key, value: $0.value) }),
                                      options: options, allowedHosts: hosts)
    }

    /// Field names in any case; a repeated Host is not one of the server's names.
    @Test func fieldsAsSent() {
        let options = HTTPServer.Options()
        #expect(RequestDecision.decide(method: "GET", version: "HTTP/1.1", fields: [("HOST", "127.0.0.1:8080")], options: options, allowedHosts: Self.hosts) == .handle(keepAlive: true, bodyLength: 0))
        #expect(Self.status(RequestDecision.decide(method: "GET", version: "HTTP/1.1", fields: [("Host", "127.0.0.1:8080"), ("host", "evil.example:1")], options: options, allowedHosts: Self.hosts)) == 421)
        #expect(RequestDecision.decide(method: "GET", version: "HTTP/1.1", fields: [("Host", "127.0.0.1:8080"), ("Connection", "keep-alive, CLOSE")], options: options, allowedHosts: Self.hosts) == .handle(keepAlive: false, bodyLength: 0))
    }

    static func status(_ decision: RequestDecision) -> Int? {
        if case .refuse(let status, _, _, _, _) = decision { return status }
        return nil
    }

    @Test func eachHeadGetsItsAnswer() {
        let host = ["host": "127.0.0.1:8080"]
        // Handled: keep-alive by version and Connection.
        #expect(Self.decide() == .handle(keepAlive: true, bodyLength: 0))
        #expect(Self.decide("HEAD", "HTTP/1.0") == .handle(keepAlive: false, bodyLength: 0))
        #expect(Self.decide("GET", "HTTP/1.1", host.merging(["connection": "Close"]) { $1 }) == .handle(keepAlive: false, bodyLength: 0))
        #expect(Self.decide("GET", "HTTP/1.1", host.merging(["host": "LOCALHOST:8080"]) { $1 }) == .handle(keepAlive: true, bodyLength: 0))
        // Refused before the handler, and how.
        #expect(Self.status(Self.decide("GET", "HTTP/2.0")) == 505)
        #expect(Self.status(Self.decide("GET", "HTTP/1.1", host.merging(["transfer-encoding": "chunked"]) { $1 })) == 400)
        #expect(Self.status(Self.decide("POST", "HTTP/1.1", host.merging(["transfer-encoding": "chunked"]) { $1 }, bodies: ["POST"])) == 411)
        #expect(Self.status(Self.decide("GET", "HTTP/1.1", host.merging(["content-length": "5"]) { $1 })) == 400)
        #expect(Self.decide("GET", "HTTP/1.1", host.merging(["content-length": "0"]) { $1 }) == .handle(keepAlive: true, bodyLength: 0))
        #expect(Self.status(Self.decide("POST", "HTTP/1.1", host.merging(["content-length": "-1"]) { $1 }, bodies: ["POST"])) == 400)
        #expect(Self.status(Self.decide("POST", "HTTP/1.1", host.merging(["content-length": "1234567890"]) { $1 }, bodies: ["POST"])) == 400)
        #expect(Self.status(Self.decide("POST", "HTTP/1.1", host.merging(["content-length": "99999999"]) { $1 }, bodies: ["POST"])) == 413)
        #expect(Self.decide("POST", "HTTP/1.1", host.merging(["content-length": "12"]) { $1 }, bodies: ["POST"]) == .handle(keepAlive: true, bodyLength: 12))
        #expect(Self.decide("GET", "HTTP/1.1", ["host": "evil.example:8080"]) == .refuse(status: 421, text: "unknown Host (this server answers only to its own address)", keepAlive: false, logged: true, allow: nil))
        #expect(Self.status(Self.decide("GET", "HTTP/1.1", [:])) == 421)
        // A method it does not serve: 405 with Allow, and the connection goes on.
        #expect(Self.decide("DELETE", "HTTP/1.1", host, bodies: ["POST"]) == .refuse(status: 405, text: "only GET and HEAD", keepAlive: true, logged: true, allow: "GET, HEAD, POST"))
    }
}
