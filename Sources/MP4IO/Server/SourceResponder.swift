import Foundation
import MP4Core

/// Answers GET and HEAD requests for one ``ByteSource`` the way players expect of a file
/// server: `Accept-Ranges: bytes`, single ranges (open, suffix, `bytes=0-1` probes) as 206
/// with `Content-Range`, unsatisfiable ones as 416 with `Content-Range: bytes */N`, several
/// ranges as the whole entity, `If-Range` honoured, a strong `ETag` derived from the source's
/// validator. Source failures before the body are 502 (with the reason); after it has
/// started the connection is closed, so a client never receives wrong bytes.
public enum SourceResponder {
    /// A strong ETag for a validator (stable across restarts).
    public static func entityTag(_ validator: String) -> String {
        "\"" + String(FNV1a.hash(validator.utf8), radix: 16) + "\""
    }

    public static func response(for request: HTTPServerRequest, source: any ByteSource, contentType: String = "video/mp4") async -> HTTPServerResponse {
        let length: UInt64, validator: String?
        do {
            length = try await source.length()
            validator = try await source.validator()
        } catch let error as MP4Error {
            return .text(502, "the origin cannot be read: \(error.message)")
        } catch {
            return .text(502, "the origin cannot be read: \(error)")
        }
        let tag = validator.map(entityTag)
        var headers: [(name: String, value: String)] = [("Accept-Ranges", "bytes"), ("Content-Type", contentType)]
        if let tag { headers.append(("ETag", tag)) }
        var range = RangeRequest.parse(request.header("range"), length: length)
        // If-Range with another validator: the representation changed, send all of it.
        if let ifRange = request.header("if-range"), case .partial = range, ifRange.trimmingCharacters(in: .whitespaces) != tag {
            range = .whole
        }
        switch range {
        case .whole:
            return HTTPServerResponse(status: 200, headers: headers, body: .source(source, 0..<length))
        case .partial(let part):
            headers.append(("Content-Range", "bytes \(part.lowerBound)-\(part.upperBound - 1)/\(length)"))
            return HTTPServerResponse(status: 206, headers: headers, body: .source(source, part))
        case .unsatisfiable:
            headers.append(("Content-Range", "bytes */\(length)"))
            return HTTPServerResponse(status: 416, headers: headers)
        }
    }
}
