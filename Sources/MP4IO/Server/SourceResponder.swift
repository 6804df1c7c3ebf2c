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

    /// The `Content-Type` to send: the source's own when it names a media type (`video/*`,
    /// `audio/*`, `application/mp4`), else `fallback` (origins often say
    /// `application/octet-stream`, which AVPlayer refuses).
    public static func contentType(given: String?, fallback: String) -> String {
        guard let given else { return fallback }
        let essence = given.split(separator: ";").first.map { $0.trimmingCharacters(in: .whitespaces).lowercased() } ?? ""
        let isMedia = (essence.hasPrefix("video/") || essence.hasPrefix("audio/") || essence == "application/mp4") && essence.count > 6
        return isMedia ? given : fallback
    }

    /// The response to `request` for `source`: its `Content-Type` and `Last-Modified` are the
    /// source's ``ResourceAttributes`` (the type through ``contentType(given:fallback:)``).
    public static func response(for request: HTTPServerRequest, source: any ByteSource, contentType fallbackType: String = "video/mp4") async -> HTTPServerResponse {
        let length: UInt64, validator: String?, attributes: ResourceAttributes
        do {
            length = try await source.length()
            validator = try await source.validator()
            attributes = try await source.attributes()
        } catch let error as MP4Error {
            return .text(502, "the origin cannot be read: \(error.message)")
        } catch {
            return .text(502, "the origin cannot be read: \(error)")
        }
        let tag = validator.map(entityTag)
        var headers: [(name: String, value: String)] = [("Accept-Ranges", "bytes"), ("Content-Type", contentType(given: attributes.contentType, fallback: fallbackType))]
        if let tag { headers.append(("ETag", tag)) }
        if let modified = attributes.lastModified { headers.append(("Last-Modified", modified)) }
        var range = RangeRequest.parse(request.header("range"), length: length)
        // If-Range with another validator (entity tag or date, compared exactly): the
        // representation changed, send all of it.
        if let ifRange = request.header("if-range")?.trimmingCharacters(in: .whitespaces), case .partial = range,
           ifRange != tag, ifRange.hasPrefix("\"") || ifRange.hasPrefix("W/") || ifRange != attributes.lastModified {
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
