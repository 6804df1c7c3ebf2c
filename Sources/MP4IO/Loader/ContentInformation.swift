import Foundation
import MP4Core

/// What a player learns about a resource before any data (an HTTP response's headers, an
/// `AVAssetResourceLoadingContentInformationRequest`): computed here, from the resource, and
/// only rendered by the server.
public struct ContentInformation: Sendable, Equatable {
    /// The resource's length in bytes.
    public var length: UInt64
    /// Its MIME type: the origin's when it names a media type (`video/*`, `audio/*`,
    /// `application/mp4`), else from the origin's name (`video/mp4`, `audio/mp4`,
    /// `video/quicktime`): origins that say `application/octet-stream` are common, and
    /// AVPlayer refuses media it cannot type.
    public var contentType: String
    /// The origin's `Last-Modified` date, when it gave one (not for the faststart view).
    public var lastModified: String?
    /// A strong entity tag, derived from the resource's validator; `nil` without one.
    public var entityTag: String?
    /// Whether byte ranges can be asked for (always, from the cache).
    public var acceptsRanges: Bool

    public init(length: UInt64, contentType: String, lastModified: String? = nil, entityTag: String? = nil, acceptsRanges: Bool = true) {
        self.length = length
        self.contentType = contentType
        self.lastModified = lastModified
        self.entityTag = entityTag
        self.acceptsRanges = acceptsRanges
    }

    /// The information of `source`: its length, validator and attributes; `fallbackType`
    /// when it names no media type.
    /// - Throws: what the source throws when it cannot say.
    public static func of(_ source: any ByteSource, fallbackType: String = "video/mp4") async throws -> ContentInformation {
        let length = try await source.length(), validator = try await source.validator(), attributes = try await source.attributes()
        return ContentInformation(length: length, contentType: mediaType(given: attributes.contentType, fallback: fallbackType),
                                  lastModified: attributes.lastModified, entityTag: validator.map(entityTag))
    }

    /// A strong ETag for a validator (stable across restarts).
    public static func entityTag(_ validator: String) -> String {
        "\"" + String(FNV1a.hash(validator.utf8), radix: 16) + "\""
    }

    /// The type to send: `given` when it names a media type (`video/*`, `audio/*`,
    /// `application/mp4`), else `fallback`.
    public static func mediaType(given: String?, fallback: String) -> String {
        guard let given else { return fallback }
        // The essence: before the parameters (on bytes: this runs for every request).
        let bytes = given.utf8
        let essence = String(decoding: bytes[..<(bytes.firstIndex(of: UInt8(ascii: ";")) ?? bytes.endIndex)], as: UTF8.self).trimmingSpaces().lowercased()
        let isMedia = (essence.hasPrefix("video/") || essence.hasPrefix("audio/") || essence == "application/mp4") && essence.count > 6
        return isMedia ? given : fallback
    }

    /// The MIME type players expect for an origin's name.
    public static func nameType(of origin: String) -> String {
        // The path of a URL (after `scheme://host`, before `?` or `#`), or a file's path; with
        // the standard library alone, on bytes (this runs for every request a player makes).
        let bytes = Array(origin.utf8)
        var path = bytes.startIndex..<(bytes.firstIndex { $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") } ?? bytes.endIndex)
        if let colon = bytes[path].firstIndex(of: UInt8(ascii: ":")), bytes[colon...].starts(with: "://".utf8) {
            let afterScheme = (colon + 3)..<path.upperBound
            path = (bytes[afterScheme].firstIndex(of: UInt8(ascii: "/")) ?? path.upperBound)..<path.upperBound
        }
        func hasSuffix(_ suffix: String) -> Bool { ASCII.equalIgnoringCase(bytes[path].suffix(suffix.utf8.count), suffix.utf8) }
        if hasSuffix(".m4a") || hasSuffix(".m4b") { return "audio/mp4" }
        if hasSuffix(".mov") || hasSuffix(".qt") { return "video/quicktime" }
        return "video/mp4"
    }
}
