import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import MP4Core

/// What a response or a transport error means for ``HTTPByteSource``, in plain functions:
/// `Content-Range`, codings, header values fit to pass on, and errors in words.
extension HTTPByteSource {
    /// Why a redirect was not followed: no `Location`, a scheme other than `http:`/`https:`
    /// (say `file:`), from `https:` to `http:` (`from`: the URL that answered), or more
    /// redirects than allowed (a loop, most likely).
    static func unfollowedRedirect(location: String?, from: URL? = nil, maxRedirects: Int) -> String {
        guard let location, !location.isEmpty else { return "a redirect without a Location header" }
        let shown = location.count > 200 ? String(location.prefix(200)) + "…" : location
        if let from, let target = URL(string: location, relativeTo: from)?.absoluteURL, HTTPRequest.isDowngrade(from: from, to: target) {
            return "a redirect from \(from.absoluteString) to plain http: (\(shown)), which is not followed: the request and the bytes would travel unencrypted under the https URL's name (--allow-insecure-redirect follows it)"
        }
        if let scheme = URL(string: location)?.scheme?.lowercased(), scheme != "http" && scheme != "https" {
            return "a redirect to a \(scheme): URL (\(shown)), which is not followed: only http: and https: are"
        }
        return "more than \(maxRedirects) redirects (a redirect loop?); the last one pointed to \(shown)"
    }

    /// Seconds for a message: whole when whole, else to a tenth.
    static func secondsText(_ seconds: Double) -> String {
        seconds.rounded() == seconds && seconds < 1e9 ? String(Int(seconds)) : String(format: "%.1f", seconds)
    }

    /// `seconds` as a duration, for any input (negative: 0; huge or NaN: about 31 years).
    static func duration(_ seconds: TimeInterval) -> Duration {
        .milliseconds(Int64(min(max(seconds.isNaN ? 1e9 : seconds, 0), 1e9) * 1000))
    }

    /// Parses `bytes a-b/total` (total may be `*`).
    static func parseContentRange(_ text: String) -> (first: UInt64, last: UInt64, total: UInt64?)? {
        // On bytes (this runs for each response of the origin: 300 for a walk of 300 heads;
        // splits of Characters were half of a response's check).
        let bytes = Array(text.trimmingSpaces().utf8)
        guard bytes.count > 6, ASCII.equalIgnoringCase(bytes.prefix(6), "bytes ".utf8) else { return nil }
        let spec = bytes[6...]
        guard let slash = spec.firstIndex(of: UInt8(ascii: "/")) else { return nil }
        let bounds = spec[..<slash], totalText = String(decoding: spec[(slash + 1)...], as: UTF8.self)
        guard let dash = bounds.firstIndex(of: UInt8(ascii: "-")),
              let first = UInt64(String(decoding: bounds[..<dash], as: UTF8.self)),
              let last = UInt64(String(decoding: bounds[(dash + 1)...], as: UTF8.self)), first <= last else { return nil }
        if totalText == "*" { return (first, last, nil) }
        // A range that passes its own total (`bytes 0-65535/1000`) is a lie, not a length.
        guard let total = UInt64(totalText), last < total else { return nil }
        return (first, last, total)
    }

    /// Refuses a response body in a coding mp4probe does not decode: any `Content-Encoding`
    /// but `identity`, any transfer coding but `chunked` and `identity`. Requests ask for
    /// `Accept-Encoding: identity`, but CDNs and misconfigured servers gzip anyway, and the
    /// compressed bytes are not the file: none of them may be delivered, or cached.
    static func checkCodings(_ head: HTTPResponseHead, name: String) throws {
        func codings(_ field: String) -> [String] {
            (head.header(field) ?? "").lowercased().split(separator: ",").map { $0.trimmingSpaces() }.filter { !$0.isEmpty }
        }
        if let coding = codings("content-encoding").first(where: { $0 != "identity" }) {
            throw MP4Error(.io, "\(name): the server sent the body compressed (Content-Encoding: \(coding)) although asked for identity; mp4probe does not decode it, so none of it was used")
        }
        if let coding = codings("transfer-encoding").first(where: { $0 != "chunked" && $0 != "identity" }) {
            throw MP4Error(.io, "\(name): the server sent the body in a transfer coding mp4probe does not decode (Transfer-Encoding: \(coding)); none of it was used")
        }
    }

    /// A header value fit to pass on in a response of our own: one line, printable, at most
    /// 256 bytes (an origin's value is not trusted to be either).
    static func passable(_ value: String) -> String? {
        let trimmed = value.trimmingSpaces()
        guard !trimmed.isEmpty, trimmed.utf8.count <= 256, trimmed.unicodeScalars.allSatisfy({ $0.value >= 0x20 && $0.value < 0x7F }) else { return nil }
        return trimmed
    }

    /// What went wrong, in words (Foundation on Linux describes every URLError as "The
    /// operation could not be completed").
    static func describe(_ error: URLError, timeout: Double, host: String? = nil, caFile: String? = nil) -> String {
        switch error.code {
        case .cannotConnectToHost: return "cannot connect to the server (connection refused or unreachable)"
        case .cannotFindHost, .dnsLookupFailed: return "the server's host name could not be resolved"
        case .timedOut: return "timed out (nothing arrived for \(timeout == timeout.rounded() ? String(Int(timeout)) : String(timeout)) s; --timeout S waits longer)"
        case .networkConnectionLost: return "the connection was lost"
        case .notConnectedToInternet: return "no network connection"
        case .badServerResponse:
            let why = error.userInfo[NSLocalizedDescriptionKey] as? String
            return "the server's answer is not valid HTTP" + (why.map { ": \($0)" } ?? "")
        case .secureConnectionFailed, .serverCertificateUntrusted, .serverCertificateHasBadDate, .serverCertificateNotYetValid, .serverCertificateHasUnknownRoot:
            return tlsFailure(error, host: host, caFile: caFile)
        case .userAuthenticationRequired: return "the server asks for credentials (--header \"Authorization: ...\")"
        case .unsupportedURL: return "the URL is not supported (only http:// and https://)"
        default:
            // FoundationNetworking reports libcurl's TLS failures as error -1 with curl's words.
            if isTLSFailure(error) { return tlsFailure(error, host: host, caFile: caFile) }
            return "network error \(error.code.rawValue): \(error.localizedDescription)"
        }
    }

    /// Whether `error` is a TLS handshake or certificate failure (never retried: the same
    /// certificate fails the same way).
    static func isTLSFailure(_ error: URLError) -> Bool {
        if [.secureConnectionFailed, .serverCertificateUntrusted, .serverCertificateHasBadDate, .serverCertificateNotYetValid, .serverCertificateHasUnknownRoot].contains(error.code) { return true }
        let text = error.localizedDescription
        return text.contains("SSL") || text.contains("certificate") || text.contains("TLS")
    }

    /// A TLS failure, naming the host, what failed (the protocol version, the connection
    /// during the handshake, the certificate) and what to do about it: the `--ca-file` advice
    /// only for a certificate that is not trusted, and not when a CA file was given (then its
    /// CA is not the one). Before, a server that speaks only TLS 1.0 and one that resets the
    /// handshake were both said to have an untrusted certificate.
    static func tlsFailure(_ error: URLError, host: String?, caFile: String? = nil) -> String {
        let reason = error.localizedDescription
        let lower = reason.lowercased()
        let said = lower.contains("ssl") || lower.contains("certificate") || lower.contains("tls") || lower.contains("handshake") || lower.contains("reset") ? " (\(reason))" : ""
        let start = "the TLS (https) connection to \(host ?? "the server") failed\(said)"
        if lower.contains("wrong version number") || lower.contains("packet length too long") {
            return start + ": the server does not speak TLS on this port (http:// instead?)"
        }
        if lower.contains("unsupported protocol") || lower.contains("protocol version") || lower.contains("no protocols available") || lower.contains("version too low") {
            return start + ": the server offers only a TLS version this client refuses (older than TLS 1.2)"
        }
        if lower.contains("reset") || lower.contains("closed the connection during the handshake") || lower.contains("unexpected eof") || lower.contains("broken pipe") {
            return start + ": the server ended the connection during the handshake (a TLS version or cipher it refuses, a firewall, or a server that is not up)"
        }
        let certificate = [.serverCertificateUntrusted, .serverCertificateHasBadDate, .serverCertificateNotYetValid, .serverCertificateHasUnknownRoot].contains(error.code) || lower.contains("certificate")
        guard certificate else { return start + ": the handshake failed" }
        if lower.contains("expired") || error.code == .serverCertificateHasBadDate { return start + ": its certificate has expired (or the clock here is wrong)" }
        if lower.contains("not yet valid") || error.code == .serverCertificateNotYetValid { return start + ": its certificate is not valid yet (or the clock here is wrong)" }
        if lower.contains("hostname mismatch") || lower.contains("does not match") { return start + ": its certificate is for another host name" }
        if let caFile { return start + ": its certificate does not chain to a CA in \(caFile) (--ca-file)" }
        if lower.contains("--ca-file") { return start }
        return start + ": its certificate is not trusted here; for a certificate from a private CA, --ca-file FILE names the CA's certificate (PEM), or add the CA to the system's trust store (Linux: /usr/local/share/ca-certificates/, then update-ca-certificates)"
    }

    /// What a transport error means for a fetch: the words to retry with (a transient failure),
    /// or, thrown, the error to report (a deadline passed, a request that cannot be sent, a
    /// cancellation, a failure that the same request would meet again).
    func retryReason(for error: any Error, pastDeadline: Bool, tooSlow: () -> MP4Error, at offset: UInt64) throws -> String {
        if let error = error as? MP4Error { throw error }
        guard let error = error as? URLError else {
            throw MP4Error(.io, "\(name): request failed: \(error.localizedDescription)", offset: offset)
        }
        if error.code == .timedOut && pastDeadline { throw tooSlow() }
        if Self.isTransient(error) { return Self.describe(error, timeout: options.timeout, host: url.host, caFile: options.caFile) }
        switch error.code {
        case .badURL: throw MP4Error(.invalidRequest, "\(name): the request cannot be sent (invalid URL or header)")
        case .cancelled: throw CancellationError()
        default: throw MP4Error(.io, "\(name): request failed: \(Self.describe(error, timeout: options.timeout, host: url.host, caFile: options.caFile))", offset: offset)
        }
    }

    static func isTransient(_ error: URLError) -> Bool {
        !isTLSFailure(error) && [.networkConnectionLost, .timedOut, .cannotConnectToHost, .notConnectedToInternet, .cannotFindHost, .dnsLookupFailed, .badServerResponse].contains(error.code)
    }
}
