// Compiled only where AVFoundation exists (Apple platforms); an empty module elsewhere. The
// logic is in MP4IO's `ResourceLoading`, tested on every platform; this file moves values
// between it and AVFoundation's request objects, and has not been compiled on this project's
// Linux machines (see docs/apple.md for what was verified and how).
#if canImport(AVFoundation)
import AVFoundation
import Foundation
import MP4IO

/// Plays `http`/`https` origins in AVPlayer through mp4probe's cache, without a local server:
/// AVPlayer's loading requests are answered by a ``MediaLoader`` (moov first, prefetch,
/// offline use of cached bytes, one fetch per byte).
///
/// ```swift
/// let loader = CachingResourceLoader(cacheDirectory: caches + "/media", maxBytes: 500_000_000)
/// if let asset = loader.asset(for: origin) {
///     player.replaceCurrentItem(with: AVPlayerItem(asset: asset))
/// }
/// ```
/// Keep the loader alive as long as its assets play (an asset holds its delegate weakly).
public final class CachingResourceLoader: NSObject, AVAssetResourceLoaderDelegate, Sendable {
    /// The loader that answers the requests.
    public let loader: MediaLoader
    /// Whether assets play the faststart view of their origin (`moov` first).
    public let faststart: Bool
    /// The queue AVFoundation calls this delegate on; loading requests are touched only on it.
    public let queue = DispatchQueue(label: "mp4probe.resource-loader")
    private let loads = ResourceLoading.Loads<ObjectIdentifier>()

    public init(loader: MediaLoader, faststart: Bool = false) {
        self.loader = loader
        self.faststart = faststart
    }

    /// A delegate over a new loader caching in `cacheDirectory`, kept under `maxBytes` on
    /// disk (least recently used entries go first; 512 MiB unless told; nil: no limit, the
    /// cache then grows until the system purges the app's caches).
    public convenience init(cacheDirectory: String, maxBytes: UInt64? = 512 << 20, faststart: Bool = false) {
        var options = MediaLoader.Options(cacheDirectory: cacheDirectory)
        options.cache.maxBytes = maxBytes
        self.init(loader: MediaLoader(options: options), faststart: faststart)
    }

    deinit { loads.cancelAll() }

    /// An asset for an `http`/`https` origin whose loading goes through this delegate; `nil`
    /// for other schemes.
    public func asset(for origin: URL) -> AVURLAsset? {
        guard let url = ResourceLoading.playableURL(for: origin) else { return nil }
        let asset = AVURLAsset(url: url)
        asset.resourceLoader.setDelegate(self, queue: queue)
        return asset
    }

    public func resourceLoader(_ resourceLoader: AVAssetResourceLoader,
                               shouldWaitForLoadingOfRequestedResource loadingRequest: AVAssetResourceLoadingRequest) -> Bool {
        guard let url = loadingRequest.request.url, let origin = ResourceLoading.origin(of: url) else { return false }
        let request = RequestOnQueue(loadingRequest, queue: queue)
        let wantsInformation = loadingRequest.contentInformationRequest != nil
        let allowedTypes = loadingRequest.contentInformationRequest?.allowedContentTypes
        let data = loadingRequest.dataRequest.map {
            ResourceLoading.DataRequest(offset: $0.requestedOffset, length: $0.requestedLength, toEnd: $0.requestsAllDataToEndOfResource)
        }
        let loader = self.loader, faststart = self.faststart
        loads.start(ObjectIdentifier(loadingRequest)) {
            do {
                try await ResourceLoading.load(loader, origin: origin, faststart: faststart, wantsInformation: wantsInformation,
                                               allowedTypes: allowedTypes, data: data,
                    answer: { answer in
                        await request.perform { request in
                            guard let information = request.contentInformationRequest else { return }
                            information.contentType = answer.contentType
                            information.contentLength = answer.contentLength
                            information.isByteRangeAccessSupported = answer.isByteRangeAccessSupported
                            information.isEntireLengthAvailableOnDemand = answer.isEntireLengthAvailableOnDemand
                        }
                    },
                    deliver: { piece in
                        let bytes = Data(piece)
                        await request.perform { $0.dataRequest?.respond(with: bytes) }
                    })
                await request.perform { $0.finishLoading() }
            } catch is CancellationError {
                // AVFoundation cancelled the request: nothing is to be finished.
            } catch {
                await request.perform { $0.finishLoading(with: error) }
            }
        }
        return true
    }

    public func resourceLoader(_ resourceLoader: AVAssetResourceLoader, didCancel loadingRequest: AVAssetResourceLoadingRequest) {
        loads.cancel(ObjectIdentifier(loadingRequest))
    }
}

/// A loading request carried into a load's task. `AVAssetResourceLoadingRequest` is not
/// `Sendable`: it is only touched in ``perform(_:)``, on the delegate's queue, where
/// AVFoundation calls the delegate; that confinement is what makes this unchecked conformance
/// sound, and the request is private so that nothing else can reach it.
private struct RequestOnQueue: @unchecked Sendable {
    private let request: AVAssetResourceLoadingRequest
    private let queue: DispatchQueue

    init(_ request: AVAssetResourceLoadingRequest, queue: DispatchQueue) {
        self.request = request
        self.queue = queue
    }

    /// Runs `body` with the request on the delegate's queue, unless the request was finished
    /// or cancelled meanwhile, and returns when it ran (one piece at a time: memory stays
    /// bounded).
    func perform(_ body: @escaping @Sendable (AVAssetResourceLoadingRequest) -> Void) async {
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            queue.async {
                if !request.isFinished && !request.isCancelled { body(request) }
                done.resume()
            }
        }
    }
}
#endif
