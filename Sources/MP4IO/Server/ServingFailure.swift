import MP4Core

/// The one mapping from what went wrong while serving to what a client is told: a request the
/// proxy cannot take (400), a file the faststart view refuses (422), an origin's refusal that
/// asking again does not change (its own 401, 403, 404, 410 or 451: a player or app that got
/// 502 retried what will never work), anything else of the origin or the cache (502). The
/// proxy, the responder and the server's body path all answer through it.
enum ServingFailure {
    /// The origin's statuses passed on as they are.
    static let passedOn: Set<Int> = [401, 403, 404, 410, 451]

    /// The status for `error`.
    static func status(of error: any Error) -> Int {
        guard let error = error as? MP4Error else { return 502 }
        if case .refused(let status)? = error.cause, passedOn.contains(status) { return status }
        switch error.kind {
        case .invalidRequest: return 400
        case .unsupported: return 422
        default: return 502
        }
    }

    /// A short text response for `error`, prefixed with `subject` (the origin) when given.
    static func response(for error: any Error, subject: String? = nil) -> HTTPServerResponse {
        let reason = (error as? MP4Error)?.message ?? "\(error)"
        let status = status(of: error)
        let text = subject.map { "\($0): \(reason)" } ?? (status == 502 ? "the origin cannot be read: \(reason)" : reason)
        return .text(status, text)
    }
}
