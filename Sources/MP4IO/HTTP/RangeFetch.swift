import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import MP4Core

/// What ``HTTPByteSource`` does after each response to a range request, and how long it
/// waits before trying again, decided without I/O (`RangeFetchTests` goes through the rows).
/// The source's fetch loop sends the requests, checks each head and delivers the body; these
/// decide the rest.
enum RangeFetch {
    /// How one response went, as the fetch loop saw it.
    struct Response: Sendable, Equatable {
        var status: Int
        /// Body bytes of this response handed to the reader, and how many it was to hand on.
        var given: Int
        var expected: Int
        /// Bytes of a `200` before the range, dropped.
        var skipped: Int = 0
        /// Cut short because the reader fell behind (URLSession): not a failure.
        var paused = false
        /// The body arrived whole: no transport error, not stopped at the read's limit.
        var complete = true
        var contentRange: String?
        var retryAfter: String?
        var location: String?
        /// The URL that answered (after the redirects followed).
        var url: URL?
        /// Why the body ended early, when the transport said more than that it ended (a chunk
        /// size no body can have).
        var bodyFailure: String?
    }

    /// What the fetch does next.
    enum Step: Sendable, Equatable {
        /// The read is complete (or, learning, the head is in).
        case done
        /// Ask for `wanted` now (the rest after a pause: not a retry).
        case next(Range<UInt64>)
        /// Ask for `wanted` again after a wait (``wait(attempt:retryAfter:options:)``): `why`.
        case retry(Range<UInt64>, why: String, retryAfter: Double?)
        /// The server ignores `Range` and gave the whole file, `length` bytes: that is the
        /// resource's length, and the head is in.
        case learnedWhole(length: UInt64)
        /// An empty file (`416` to the first bytes, `bytes */0`).
        case empty
        /// Fail with `error`.
        case fail(MP4Error)
    }

    /// The step after `response` to a request for `wanted` of `name`; `learning`: the first
    /// request (whose response sets the length); `knownLength`: the length as learned.
    static func after(_ response: Response, wanted: Range<UInt64>, learning: Bool, knownLength: UInt64?, name: String, maxRedirects: Int) -> Step {
        let status = response.status
        switch status {
        case 206:
            let rest = (wanted.lowerBound + UInt64(response.given))..<wanted.upperBound
            if learning { return .done }   // the head: whatever the window held
            if response.paused && response.given > 0 && !rest.isEmpty { return .next(rest) }
            if response.given < response.expected || !rest.isEmpty {
                // Cut short (dropped connection, short body): only the missing part again.
                return .retry(rest, why: "the response ended after \(response.given) of \(response.expected) bytes" + (response.bodyFailure.map { ": \($0)" } ?? ""), retryAfter: nil)
            }
            return .done
        case 200:
            if learning && knownLength == nil {
                guard response.complete && !response.paused else {
                    return .fail(MP4Error(.io, "\(name): the server ignores Range and does not say how long the file is"))
                }
                return .learnedWhole(length: UInt64(response.given))
            }
            // The whole body from 0, minus the `skipped` bytes before the range.
            let given = response.skipped < Int(clamping: wanted.lowerBound) ? 0 : response.given
            let rest = (wanted.lowerBound + UInt64(given))..<wanted.upperBound
            if rest.isEmpty || (learning && response.complete && !response.paused) { return .done }
            if response.paused && given > 0 { return .next(rest) }
            return .retry(rest, why: "the response ended after \(response.skipped + given) bytes", retryAfter: nil)
        case 416 where learning:
            // `bytes=0-…` not satisfiable: an empty file (`Content-Range: bytes */0`).
            guard response.contentRange.map({ $0.trimmingSpaces() == "bytes */0" }) ?? true else {
                return .fail(MP4Error(.io, "\(name): 416 for the first bytes of the file (\(response.contentRange ?? "no Content-Range"))"))
            }
            return .empty
        case 416:
            return .fail(MP4Error(.io, "\(name): 416 range \(wanted.lowerBound)-\(wanted.upperBound - 1) not satisfiable (the file is shorter than \(knownLength ?? 0) bytes: changed on the server?)", offset: wanted.lowerBound).caused(by: .sourceChanged))
        case 429, 500...599:
            return .retry(wanted, why: "HTTP \(status)", retryAfter: response.retryAfter.flatMap { Double($0.trimmingSpaces()) })
        case 300...399:
            return .fail(MP4Error(.io, "\(name): HTTP \(status), \(HTTPByteSource.unfollowedRedirect(location: response.location, from: response.url, maxRedirects: maxRedirects))", offset: wanted.lowerBound)
                .caused(by: .refused(status: status)))
        default:
            let hint = status == 404 ? " (not found)" : status == 401 || status == 403 ? " (not allowed: --header \"Authorization: ...\"?)" : ""
            return .fail(MP4Error(.io, "\(name): HTTP \(status)\(hint)", offset: wanted.lowerBound).caused(by: .refused(status: status)))
        }
    }

    /// Seconds to wait before try `attempt` (1 for the first retry): the server's
    /// `Retry-After` when it gave a usable one, else ``HTTPByteSource/Options/retryDelay``
    /// doubling; never negative, never past ``HTTPByteSource/Options/maxRetryAfter`` (a
    /// header's negative, NaN or huge value must not trap or stall).
    static func wait(attempt: Int, retryAfter: Double?, options: HTTPByteSource.Options) -> Double {
        let wait = retryAfter.flatMap { $0.isFinite ? $0 : nil } ?? options.retryDelay * Double(1 << min(max(attempt - 1, 0), 30))
        return min(max(wait, 0), max(options.maxRetryAfter, 0))
    }
}
