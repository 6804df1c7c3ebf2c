/// Reads bits most-significant first; reading past the end yields zeros and sets
/// ``isOverrun``.
struct BitReader {
    private let bytes: [UInt8]
    private var bitPosition = 0
    private(set) var isOverrun = false

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    /// Bits not read yet.
    var remainingBits: Int { max(0, bytes.count * 8 - bitPosition) }

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
