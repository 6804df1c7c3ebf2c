import MP4Core

/// The origin of a fetch whose bytes are already in hand: `range` comes from `bytes`, anything
/// else from `base` (the entry's origin). The walk ahead reads a fragment's head from the
/// origin itself and hands it to the cache this way (``CachedByteSource/adopt(_:)``), so it
/// is written, claimed and committed as every fetch is, without a second request.
struct HeldBytes: WrappingSource {
    let base: any ByteSource
    let range: Range<UInt64>
    let bytes: [UInt8]

    init(base: any ByteSource, bytes: [UInt8], at offset: UInt64) {
        self.base = base
        self.bytes = bytes
        range = offset..<(offset + UInt64(bytes.count))
    }

    func length() async throws -> UInt64 { try await base.length() }

    func read(_ wanted: Range<UInt64>) async throws -> [UInt8] {
        var collected: [UInt8] = []
        try await read(wanted) { collected += $0 }
        return collected
    }

    /// The part of `wanted` before the held bytes and the part after come from `base`; the
    /// held part from memory, in one piece.
    func read(_ wanted: Range<UInt64>, into consume: (ArraySlice<UInt8>) async throws -> Void) async throws {
        guard wanted.overlaps(range) else { return try await base.read(wanted, into: consume) }
        if wanted.lowerBound < range.lowerBound { try await base.read(wanted.lowerBound..<range.lowerBound, into: consume) }
        let held = max(wanted.lowerBound, range.lowerBound)..<min(wanted.upperBound, range.upperBound)
        try await consume(bytes[Int(held.lowerBound - range.lowerBound)..<Int(held.upperBound - range.lowerBound)])
        if wanted.upperBound > range.upperBound { try await base.read(range.upperBound..<wanted.upperBound, into: consume) }
    }
}
