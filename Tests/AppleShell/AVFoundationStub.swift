// The AVFoundation declarations CachingResourceLoader uses, as Apple's SDK declares them for
// Swift: request classes that are not Sendable, a delegate protocol on NSObjectProtocol.
// Used by typecheck.sh only, to compile the adapter in Swift 6 mode on Linux; it is not the
// SDK (its annotations were read from Apple's documentation, not from the headers).
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
open class AVAssetResourceLoadingContentInformationRequest: NSObject {
    open var contentType: String?
    open var contentLength: Int64 = 0
    open var isByteRangeAccessSupported = false
    open var allowedContentTypes: [String]? { nil }
    open var isEntireLengthAvailableOnDemand = false
}
@available(*, unavailable) extension AVAssetResourceLoadingContentInformationRequest: @unchecked Sendable {}
open class AVAssetResourceLoadingDataRequest: NSObject {
    open var requestedOffset: Int64 { 0 }
    open var requestedLength: Int { 0 }
    open var requestsAllDataToEndOfResource: Bool { false }
    open func respond(with data: Data) {}
}
@available(*, unavailable) extension AVAssetResourceLoadingDataRequest: @unchecked Sendable {}
open class AVAssetResourceLoadingRequest: NSObject {
    open var request: URLRequest { URLRequest(url: URL(fileURLWithPath: "/")) }
    open var contentInformationRequest: AVAssetResourceLoadingContentInformationRequest? { nil }
    open var dataRequest: AVAssetResourceLoadingDataRequest? { nil }
    open var isFinished: Bool { false }
    open var isCancelled: Bool { false }
    open func finishLoading() {}
    open func finishLoading(with error: (any Error)?) {}
}
@available(*, unavailable) extension AVAssetResourceLoadingRequest: @unchecked Sendable {}
public protocol AVAssetResourceLoaderDelegate: NSObjectProtocol {
    func resourceLoader(_ resourceLoader: AVAssetResourceLoader, shouldWaitForLoadingOfRequestedResource loadingRequest: AVAssetResourceLoadingRequest) -> Bool
    func resourceLoader(_ resourceLoader: AVAssetResourceLoader, didCancel loadingRequest: AVAssetResourceLoadingRequest)
}
open class AVAssetResourceLoader: NSObject {
    open func setDelegate(_ delegate: (any AVAssetResourceLoaderDelegate)?, queue: DispatchQueue?) {}
}
open class AVURLAsset: NSObject {
    public init(url: URL) {}
    open var resourceLoader: AVAssetResourceLoader { AVAssetResourceLoader() }
}
