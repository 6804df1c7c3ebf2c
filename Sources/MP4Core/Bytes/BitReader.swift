/// Reads bits most-significant first; reading past the end yields zeros and sets
/// ``isOverrun``.
struct BitReader {
    private let bytes: [UInt8]
    private var bitPosition = 0
    private(set) var isOverrun = false

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    /// Bits not read yet.
    var remainingBits: Int { max(0, bytes.count * 8 - bitPosition) }

    /// Marks the reader overrun: what it read is not to be trusted.
    mutating func markOverrun() { isOverrun = true }

    mutating func read(_ count: Int) -> UInt32 {
        var value: UInt32 = 0
        for _ in 0..<count {
            let byteIndex = bitPosition / 8
            var bit: UInt32 = 0
            if byteIndex < bytes.count {
                bit = UInt32(bytes[byteIndex] >> (7 - UInt8(bitPosition % 8))) & 1
            } else {
                isOverrun = true
            }
            value = value << 1 | bit
            bitPosition += 1
        }
        return value
    }
}

extension BitReader {
    /// An unsigned Exp-Golomb code, ue(v) (ITU-T H.264 9.1). A code of more than 31 leading
    /// zeros is not one a parameter set holds: it reads as an overrun.
    mutating func readExpGolomb() -> UInt32 {
        var zeros = 0
        while read(1) == 0 {
            zeros += 1
            if zeros > 31 || isOverrun { markOverrun(); return 0 }
        }
        guard zeros > 0 else { return 0 }
        return UInt32((UInt64(1) << UInt64(zeros)) - 1 + UInt64(read(zeros)))
    }

    /// A signed Exp-Golomb code, se(v).
    mutating func readSignedExpGolomb() -> Int64 {
        let code = Int64(readExpGolomb())
        return code & 1 == 1 ? (code + 1) / 2 : -(code / 2)
    }

    /// Skips `count` bits (any number: reads them 32 at a time).
    mutating func skip(_ count: Int) {
        var left = count
        while left > 0 {
            let step = min(left, 32)
            _ = read(step)
            left -= step
        }
    }
}
