import Foundation
import MP4Core

/// Answers GET and HEAD requests for one ``ByteSource`` the way players expect of a file
/// server: `Accept-Ranges: bytes`, single ranges (open, suffix, `bytes=0-1` probes) as 206
/// with `Content-Range`, unsatisfiable ones as 416 with `Content-Range: bytes */N`, several
/// ranges as the whole entity, `If-Range` honoured, a strong `ETag` derived from the source's
/// validator (see ``ContentInformation``). Source failures before the body are 502 (with the reason); after it has
/// started the connection is closed, so a client never receives wrong bytes.
public enum SourceResponder {
    /// The response to `request` for `source`, its ``ContentInformation`` read from it
    /// (`fallbackType` when it names no media type).
    public static func response(for request: HTTPServerRequest, source: any ByteSource, contentType fallbackType: String = "video/mp4") async -> HTTPServerResponse {
        do {
            return response(for: request, information: try await ContentInformation.of(source, fallbackType: fallbackType), body: source)
        } catch {
            return ServingFailure.response(for: error)
        }
    }

    /// The response to `request` for a resource described by `information`, whose bytes
    /// `body` gives: the rendering of what the loader decided (type, validators), with the
    /// range semantics players rely on.
    ///
    /// `deliverable`, when given, shortens a partial range to what can be delivered (a cached
    /// run while the origin is unreachable: ``OriginOutage``); the `206` then says so in its
    /// `Content-Range` instead of promising bytes it has no way to get.
    public static func response(for request: HTTPServerRequest, information: ContentInformation, body: any ByteSource,
                                deliverable: ((Range<UInt64>) -> Range<UInt64>)? = nil) -> HTTPServerResponse {
        let length = information.length, tag = information.entityTag
        var headers: HTTPFields = [("Accept-Ranges", "bytes"), ("Content-Type", information.contentType)]
        if let tag { headers.append(("ETag", tag)) }
        if let modified = information.lastModified { headers.append(("Last-Modified", modified)) }
        var range = RangeRequest.parse(request.header("range"), length: length)
        // If-Range with another validator (entity tag or date, compared exactly): the
        // representation changed, send all of it.
        if let ifRange = request.header("if-range")?.trimmingSpaces(), case .partial = range,
           ifRange != tag, ifRange.hasPrefix("\"") || ifRange.hasPrefix("W/") || ifRange != information.lastModified {
            range = .whole
        }
        switch range {
        case .whole:
            return HTTPServerResponse(status: 200, headers: headers, body: .source(body, 0..<length))
        case .partial(let asked):
            let part = deliverable.map { $0(asked) }.flatMap { $0.isEmpty || $0.lowerBound != asked.lowerBound ? nil : $0 } ?? asked
            headers.append(("Content-Range", "bytes \(part.lowerBound)-\(part.upperBound - 1)/\(length)"))
            return HTTPServerResponse(status: 206, headers: headers, body: .source(body, part))
        case .unsatisfiable:
            headers.append(("Content-Range", "bytes */\(length)"))
            return HTTPServerResponse(status: 416, headers: headers)
        }
    }
}
