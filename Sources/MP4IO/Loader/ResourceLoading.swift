import Foundation
import MP4Core

/// What an `AVAssetResourceLoaderDelegate` does with a ``MediaLoader``, without AVFoundation:
/// the URL mapping, the request arithmetic, the content information, the delivery and the
/// cancellation bookkeeping live here, where they are tested on every platform; the delegate
/// in `MP4ProbeAVFoundation` (`CachingResourceLoader`) only moves values between this and
/// AVFoundation's request objects.
public enum ResourceLoading {
    /// The scheme prefix that sends AVPlayer's requests to the delegate: `https://host/a.mp4`
    /// is played as `mp4probe-https://host/a.mp4` (AVPlayer loads `http(s)` itself and asks a
    /// delegate only for schemes it does not know).
    public static let schemePrefix = "mp4probe-"

    /// The URL to give `AVURLAsset` for an `http`/`https` origin; `nil` for other schemes.
    public static func playableURL(for origin: URL) -> URL? {
        guard var components = URLComponents(url: origin, resolvingAgainstBaseURL: false),
              let scheme = components.scheme?.lowercased(), scheme == "http" || scheme == "https" else { return nil }
        components.scheme = schemePrefix + scheme
        return components.url
    }

    /// The origin of a URL made by ``playableURL(for:)``; `nil` for any other URL (the
    /// delegate then declines the request).
    public static func origin(of url: URL) -> String? {
        guard var components = URLComponents(url: url, resolvingAgainstBaseURL: false),
              let scheme = components.scheme?.lowercased(), scheme.hasPrefix(schemePrefix) else { return nil }
        let inner = String(scheme.dropFirst(schemePrefix.count))
        guard inner == "http" || inner == "https" else { return nil }
        components.scheme = inner
        return components.string
    }

    /// A data request in plain numbers, as `AVAssetResourceLoadingDataRequest` states it.
    public struct DataRequest: Sendable, Equatable {
        /// `requestedOffset` (an `Int64`: a hostile or broken caller may send a negative one).
        public var offset: Int64
        /// `requestedLength` (an `Int`).
        public var length: Int
        /// `requestsAllDataToEndOfResource`: the length is then to be ignored.
        public var toEnd: Bool

        public init(offset: Int64, length: Int, toEnd: Bool) {
            self.offset = offset
            self.length = length
            self.toEnd = toEnd
        }

        /// The bytes to deliver for a resource of `resourceLength` bytes: clamped to its end;
        /// empty when the offset is at or past it. `nil` for a negative offset or length.
        public func range(resourceLength: UInt64) -> Range<UInt64>? {
            guard offset >= 0, length >= 0 || toEnd else { return nil }
            let start = min(UInt64(offset), resourceLength)
            // At most Int64.max + Int.max: the sum fits in 64 bits.
            return start..<(toEnd ? resourceLength : min(start + UInt64(length), resourceLength))
        }
    }

    /// What an `AVAssetResourceLoadingContentInformationRequest` is answered with.
    public struct ContentAnswer: Sendable, Equatable {
        /// A uniform type identifier (AVFoundation wants a UTI here, not a MIME type), one of
        /// the request's `allowedContentTypes` when it has them.
        public var contentType: String
        public var contentLength: Int64
        public var isByteRangeAccessSupported: Bool
        /// Every byte is on the device (the cache holds the whole resource): the player may
        /// read any part at once, offline too (`isEntireLengthAvailableOnDemand`).
        public var isEntireLengthAvailableOnDemand = false
    }

    /// The answer for `information`; `allowedTypes` are the request's `allowedContentTypes`
    /// (nil: any). Finishing a request whose type is not among them raises an Objective-C
    /// exception in AVFoundation, so a resource no allowed type fits is an error instead.
    /// - Throws: ``MP4Error`` `.unsupported` when no allowed type fits.
    public static func answer(_ information: ContentInformation, entirelyCached: Bool = false, allowedTypes: [String]? = nil) throws -> ContentAnswer {
        let ours = uniformType(ofMIMEType: information.contentType)
        guard let type = contentType(ours, allowed: allowedTypes) else {
            throw MP4Error(.unsupported, "the player accepts only \((allowedTypes ?? []).joined(separator: ", ")) and this resource is \(ours)")
        }
        return ContentAnswer(contentType: type, contentLength: Int64(clamping: information.length),
                             isByteRangeAccessSupported: information.acceptsRanges, isEntireLengthAvailableOnDemand: entirelyCached)
    }

    /// The uniform types of ISO base media files (MPEG-4, QuickTime, M4A, M4V, 3GPP): one
    /// container, which AVFoundation reads whichever of them it is told.
    static let isoBaseMediaTypes: Set<String> = ["public.mpeg-4", "com.apple.quicktime-movie", "com.apple.m4a-audio", "com.apple.m4v-video",
                                                 "public.mpeg-4-audio", "public.3gpp", "public.3gpp2", "com.apple.protected-mpeg-4-audio"]

    /// The type to answer with when the player allows only `allowed` (nil or empty: any):
    /// `ours` when it is allowed, else the first allowed type of the same container (ISO
    /// base media), else nil.
    public static func contentType(_ ours: String, allowed: [String]?) -> String? {
        guard let allowed, !allowed.isEmpty, !allowed.contains(ours) else { return ours }
        guard isoBaseMediaTypes.contains(ours) else { return nil }
        return allowed.first { isoBaseMediaTypes.contains($0) }
    }

    /// The uniform type identifier of a MIME type mp4probe serves (parameters ignored);
    /// `public.mpeg-4` for any other.
    public static func uniformType(ofMIMEType type: String) -> String {
        let essence = type.split(separator: ";").first.map { $0.trimmingSpaces().lowercased() } ?? ""
        switch essence {
        case "video/quicktime": return "com.apple.quicktime-movie"
        case "audio/mp4", "audio/x-m4a", "audio/m4a": return "com.apple.m4a-audio"
        case "video/x-m4v": return "com.apple.m4v-video"
        case "audio/mpeg", "audio/mp3": return "public.mp3"
        case "video/3gpp": return "public.3gpp"
        default: return "public.mpeg-4"
        }
    }

    /// The most a delegate hands AVFoundation in one `respond(with:)`: it copies each piece
    /// into its own buffer, and smaller pieces let it start sooner and stop sooner.
    public static let maxPiece = 256 << 10

    /// Answers one loading request from `loader`: the content information first when asked
    /// (`answer`), then the data asked for, in pieces of at most ``maxPiece`` bytes (`deliver`,
    /// awaited before the next piece is read: memory stays bounded whatever the player asks).
    /// Returns when all was delivered; throws `CancellationError` when the task is cancelled
    /// (the player cancelled the request: nothing is to be finished), or what the loader throws
    /// (the request is to be finished with that error).
    public static func load(_ loader: MediaLoader, origin: String, faststart: Bool = false,
                            wantsInformation: Bool, allowedTypes: [String]? = nil, data request: DataRequest?,
                            answer: @Sendable (ContentAnswer) async -> Void,
                            deliver: @Sendable (ArraySlice<UInt8>) async -> Void) async throws {
        let resource = try await loader.resource(for: origin, faststart: faststart)
        try Task.checkCancellation()
        if wantsInformation {
            await answer(try Self.answer(try await resource.contentInformation(), entirelyCached: await resource.isEntirelyCached, allowedTypes: allowedTypes))
        }
        guard let request else { return }
        guard let range = request.range(resourceLength: try await resource.length()) else {
            throw MP4Error(.invalidRequest, "a data request for offset \(request.offset), length \(request.length)")
        }
        guard !range.isEmpty else { return }
        try await resource.read(range) { piece in
            var rest = piece
            while !rest.isEmpty {
                try Task.checkCancellation()
                let part = rest.prefix(maxPiece)
                await deliver(part)
                rest = rest.dropFirst(part.count)
            }
        }
        try Task.checkCancellation()
    }

    /// The loads in flight, by request: a cancellation finds its task, and a finished load
    /// forgets only itself. Keys may be reused once their request is gone (an
    /// `ObjectIdentifier`), so a load is forgotten by the token its registration returned,
    /// never by key alone, and a cancellation for a key with no load does nothing. (A
    /// delegate starts a load before it returns `true` to AVFoundation, which cancels only
    /// requests it was told would be loaded, on the same queue: a cancellation never comes
    /// first.)
    public final class Loads<Key: Hashable & Sendable>: Sendable {
        private struct State {
            var tasks: [Key: (token: UInt64, task: Task<Void, Never>)] = [:]
            var nextToken: UInt64 = 0
        }
        private let state = Locked(State())

        public init() {}

        /// Starts `body` as the load of `key` (cancelling the load of a request that is gone
        /// and had the same key); the load forgets itself when `body` returns.
        public func start(_ key: Key, _ body: @escaping @Sendable () async -> Void) {
            let replaced = state.withLock { state -> Task<Void, Never>? in
                state.nextToken += 1
                let token = state.nextToken
                // Made under the lock, so that it is registered before it can finish.
                let task = ServingTask.start { [self] in
                    await body()
                    finished(key, token: token)
                }
                let replaced = state.tasks[key]?.task
                state.tasks[key] = (token, task)
                return replaced
            }
            replaced?.cancel()
        }

        /// Cancels the load of `key` (the player cancelled its request).
        public func cancel(_ key: Key) {
            state.withLock { $0.tasks.removeValue(forKey: key) }?.task.cancel()
        }

        /// Forgets the load started with `token` (it finished), if it is still `key`'s.
        private func finished(_ key: Key, token: UInt64) {
            state.withLock { state in
                if state.tasks[key]?.token == token { state.tasks[key] = nil }
            }
        }

        /// Loads in flight.
        public var count: Int { state.withLock { $0.tasks.count } }

        /// Cancels every load (the delegate goes away).
        public func cancelAll() {
            let tasks = state.withLock { state -> [Task<Void, Never>] in
                defer { state.tasks = [:] }
                return state.tasks.values.map(\.task)
            }
            tasks.forEach { $0.cancel() }
        }
    }
}
