import Foundation
import MP4Core

/// A request as ``HTTPServer`` hands it to its handler.
public struct HTTPServerRequest: Sendable {
    /// `GET`, `HEAD`, or one of ``HTTPServer/Options/methodsWithBodies`` (the server answers
    /// other methods itself, 405).
    public var method: String
    /// The request target as sent (`/abc/movie.mp4?url=...`).
    public var target: String
    /// The path part of the target, percent-decoded.
    public var path: String
    /// The query parameters, percent-decoded (the last value of a repeated name wins).
    public var query: [String: String]
    /// The header fields in order.
    public var headers: HTTPFields
    /// The request body (only for ``HTTPServer/Options/methodsWithBodies``; at most
    /// ``HTTPServer/Options/maxRequestBody`` bytes).
    public var body: [UInt8] = []

    /// The value of header `name` (any case); repeated fields joined with ", ".
    public func header(_ name: String) -> String? { headers[name] }
}

/// A response: status, header fields, and a body the server streams.
public struct HTTPServerResponse: Sendable {
    /// Where the body comes from.
    public enum Body: Sendable {
        case empty
        case bytes([UInt8])
        /// `range` of `source`, streamed as it is read (memory: one piece).
        case source(any ByteSource, Range<UInt64>)

        var count: UInt64 {
            switch self {
            case .empty: return 0
            case .bytes(let bytes): return UInt64(bytes.count)
            case .source(_, let range): return UInt64(range.count)
            }
        }
    }

    public var status: Int
    public var headers: HTTPFields
    public var body: Body
    /// The request showed what the server's users hold (the proxy's secret): its connection
    /// may stay open and keep its slot. See ``HTTPServer/Options/requiresTrust``.
    public var trustsConnection = false

    public init(status: Int, headers: HTTPFields = [], body: Body = .empty) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// A short text response (errors).
    public static func text(_ status: Int, _ message: String) -> HTTPServerResponse {
        HTTPServerResponse(status: status, headers: [("Content-Type", "text/plain; charset=utf-8")], body: .bytes(Array((message + "\n").utf8)))
    }
}
