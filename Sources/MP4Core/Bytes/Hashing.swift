/// 64-bit FNV-1a, the one non-cryptographic hash of the package: cache keys and table
/// checksums, ETags derived from validators, `check --shard`. Stable across runs, machines and
/// Swift versions (Swift's own `hashValue` is seeded per process).
public enum FNV1a {
    static let offsetBasis: UInt64 = 0xcbf2_9ce4_8422_2325
    static let prime: UInt64 = 0x0000_0100_0000_01B3

    /// FNV-1a over `bytes`, one byte at a time.
    public static func hash(_ bytes: some Sequence<UInt8>) -> UInt64 {
        var hash = offsetBasis
        for byte in bytes { hash = (hash ^ UInt64(byte)) &* prime }
        return hash
    }

    /// FNV-1a over 64-bit little-endian words (then the tail bytes): about 8 times faster than
    /// ``hash(_:)`` for data blocks. Changing any one word always changes the result (xor and
    /// multiplication by an odd number are bijections modulo 2^64).
    public static func hashWords(_ bytes: [UInt8]) -> UInt64 {
        var hash = offsetBasis
        bytes.withUnsafeBytes { raw in
            let words = raw.count / 8
            for index in 0..<words {
                hash = (hash ^ UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: index * 8, as: UInt64.self))) &* prime
            }
            for index in words * 8..<raw.count { hash = (hash ^ UInt64(raw[index])) &* prime }
        }
        return hash
    }

    /// ``hashWords(_:)`` over bytes that arrive in pieces: fed the pieces of a block in order,
    /// ``value`` is what `hashWords` of the whole block is (a cache hashes what it writes as it
    /// arrives instead of reading it back).
    public struct Words: Sendable {
        private var hash = FNV1a.offsetBasis
        /// Bytes of an incomplete word, little-endian, and how many.
        private var pending: UInt64 = 0
        private var pendingCount = 0

        public init() {}

        public mutating func update(_ bytes: ArraySlice<UInt8>) {
            bytes.withUnsafeBytes { raw in
                var index = 0
                while pendingCount > 0 && pendingCount < 8 && index < raw.count {
                    pending |= UInt64(raw[index]) << (8 * UInt64(pendingCount))
                    pendingCount += 1
                    index += 1
                }
                if pendingCount == 8 {
                    hash = (hash ^ pending) &* FNV1a.prime
                    (pending, pendingCount) = (0, 0)
                }
                while raw.count - index >= 8 {
                    hash = (hash ^ UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: index, as: UInt64.self))) &* FNV1a.prime
                    index += 8
                }
                while index < raw.count {
                    pending |= UInt64(raw[index]) << (8 * UInt64(pendingCount))
                    pendingCount += 1
                    index += 1
                }
            }
        }

        /// The hash of the bytes fed so far (a tail shorter than a word is hashed byte by byte).
        public var value: UInt64 {
            var result = hash
            for index in 0..<pendingCount { result = (result ^ ((pending >> (8 * UInt64(index))) & 0xFF)) &* FNV1a.prime }
            return result
        }
    }
}

/// Lower-case hexadecimal text, the one formatter for bytes and flags in messages and dumps.
public enum Hex {
    /// Two digits per byte, joined by `separator` (`"68 65 6c"`, or `"68656c"`).
    public static func bytes(_ bytes: some Sequence<UInt8>, separator: String = "") -> String {
        bytes.map { byte in (byte < 16 ? "0" : "") + String(byte, radix: 16) }.joined(separator: separator)
    }

    /// Box flags as `0x` and six digits (`0x000001`).
    public static func flags(_ flags: UInt32) -> String {
        let hex = String(flags, radix: 16)
        return "0x" + String(repeating: "0", count: max(0, 6 - hex.count)) + hex
    }
}
