import Foundation
import MP4Core

/// A source that can take a cache entry's length and validator as its own and check every
/// response against them, so that no separate request confirms it (``HTTPByteSource``: `If-Range`).
protocol PresumingSource: ByteSource {
    /// Whether it took them (false: it asks as usual, and ``CheckedOrigin`` confirms first).
    func presume(length: UInt64, validator: String?) -> Bool
}

extension HTTPByteSource: PresumingSource {}

/// The origin of an entry that was opened without asking it (fresh or stale): before the first
/// byte is taken from it, its length and validator must be the entry's, so a changed origin is
/// never mixed into the entry. A mismatch is an error with cause ``MP4Error/Cause/sourceChanged``.
/// An origin that checks each response itself (``PresumingSource``) is not asked first: the
/// first missing byte costs one request, not a confirmation (a 64 KiB head) and then the fetch.
final class CheckedOrigin: WrappingSource {
    let base: any ByteSource
    let expectedLength: UInt64
    let expectedValidator: String?
    private let confirmed: Locked<Bool>

    init(base: any ByteSource, length: UInt64, validator: String?) {
        self.base = base
        self.expectedLength = length
        self.expectedValidator = validator
        self.confirmed = Locked((base as? any PresumingSource)?.presume(length: length, validator: validator) ?? false)
    }

    func length() async throws -> UInt64 { expectedLength }
    func validator() async throws -> String? { expectedValidator }

    private func confirm() async throws {
        if confirmed.withLock({ $0 }) { return }
        let length = try await base.length(), validator = try await base.validator()
        guard length == expectedLength, validator == expectedValidator else {
            var error = MP4Error(.io, "\(base.name) changed since it was cached (\(length) bytes, validator \(validator ?? "none"); the cache holds \(expectedLength) bytes, validator \(expectedValidator ?? "none")); nothing was mixed, the next open starts the entry again")
            error.cause = .sourceChanged
            throw error
        }
        confirmed.withLock { $0 = true }
    }

    func read(_ range: Range<UInt64>) async throws -> [UInt8] {
        try await confirm()
        return try await base.read(range)
    }

    func read(_ range: Range<UInt64>, into consume: (ArraySlice<UInt8>) async throws -> Void) async throws {
        try await confirm()
        try await base.read(range, into: consume)
    }
}
