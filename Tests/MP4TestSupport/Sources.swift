import MP4Core
import Testing

/// Wraps a source and records every read, to prove what a parse reads.
public actor ReadLog {
    public private(set) var ranges: [Range<UInt64>] = []
    public init() {}
    func record(_ range: Range<UInt64>) { ranges.append(range) }
    /// Total bytes read.
    public var byteCount: UInt64 { ranges.reduce(0) { $0 + UInt64($1.count) } }
}

/// A byte source that logs the ranges it is asked for.
public struct CountingSource<Base: ByteSource>: ByteSource {
    public let base: Base
    public let log = ReadLog()
    public init(_ base: Base) { self.base = base }
    public var name: String { base.name }
    public var preferredReadSize: Int { base.preferredReadSize }
    public func length() async throws -> UInt64 { try await base.length() }
    public func read(_ range: Range<UInt64>) async throws -> [UInt8] {
        let bytes = try await base.read(range)
        await log.record(range.lowerBound..<(range.lowerBound + UInt64(bytes.count)))
        return bytes
    }
}

/// A large virtual file made of byte segments and zero-filled holes, so a test can build a
/// 40 MB (or 5 GB) file without writing it.
public struct SyntheticSource: ByteSource {
    public enum Segment: Sendable {
        case bytes([UInt8])
        case zeros(UInt64)
        var count: UInt64 {
            switch self {
            case .bytes(let b): return UInt64(b.count)
            case .zeros(let n): return n
            }
        }
    }

    public let segments: [Segment]
    public let name = "<synthetic>"
    private let starts: [UInt64]
    private let total: UInt64

    public init(_ segments: [Segment]) {
        self.segments = segments
        var starts: [UInt64] = []
        var position: UInt64 = 0
        for segment in segments {
            starts.append(position)
            position += segment.count
        }
        self.starts = starts
        self.total = position
    }

    public func length() async throws -> UInt64 { total }

    public func read(_ range: Range<UInt64>) async throws -> [UInt8] {
        let upper = min(range.upperBound, total)
        guard range.lowerBound < upper else { return [] }
        var out: [UInt8] = []
        out.reserveCapacity(Int(upper - range.lowerBound))
        for (segment, start) in zip(segments, starts) {
            let end = start + segment.count
            let lo = max(start, range.lowerBound), hi = min(end, upper)
            guard lo < hi else { continue }
            switch segment {
            case .bytes(let b): out.append(contentsOf: b[Int(lo - start)..<Int(hi - start)])
            case .zeros: out.append(contentsOf: repeatElement(0, count: Int(hi - lo)))
            }
        }
        return out
    }
}

/// A small deterministic random number generator (SplitMix64) for seeded tests.
public struct SeededRandom: RandomNumberGenerator {
    private var state: UInt64
    public init(seed: UInt64) { state = seed }
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// `count` random bytes, eight per draw (megabytes of test data drawn a byte at a time
    /// through a closure cost seconds of the shared task pool under ASan, and starved the
    /// proxy tests running beside them).
    public mutating func bytes(_ count: Int) -> [UInt8] {
        var result = [UInt8](repeating: 0, count: count)
        result.withUnsafeMutableBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let word = next()
                if buffer.count - offset >= 8 {
                    buffer.storeBytes(of: word, toByteOffset: offset, as: UInt64.self)
                    offset += 8
                } else {
                    for shift in 0..<(buffer.count - offset) { buffer[offset + shift] = UInt8(truncatingIfNeeded: word >> (8 * shift)) }
                    offset = buffer.count
                }
            }
        }
        return result
    }
}

/// Builds boxes byte by byte for tests.
public enum BoxBuilder {
    /// A box with a 32-bit size.
    public static func box(_ type: String, _ payload: [UInt8] = []) -> [UInt8] {
        u32(UInt32(8 + payload.count)) + (FourCC(type)?.bytes ?? []) + payload
    }

    /// A container of `children`.
    public static func box(_ type: String, children: [[UInt8]]) -> [UInt8] { box(type, children.flatMap { $0 }) }

    /// A full box (version and flags before the payload).
    public static func fullBox(_ type: String, version: UInt8 = 0, flags: UInt32 = 0, _ payload: [UInt8] = []) -> [UInt8] {
        box(type, [version] + Array(u32(flags).dropFirst()) + payload)
    }

    /// A box with `size == 1` and a 64-bit size.
    public static func largeBox(_ type: String, _ payload: [UInt8]) -> [UInt8] {
        u32(1) + (FourCC(type)?.bytes ?? []) + u64(UInt64(16 + payload.count)) + payload
    }

    // The production encoder (ByteWriter), so tests and code agree on byte order.
    public static func u16(_ v: UInt16) -> [UInt8] { ByteWriter.bigEndian(UInt64(v), width: 2) }
    public static func u32(_ v: UInt32) -> [UInt8] { ByteWriter.bigEndian(UInt64(v), width: 4) }
    public static func u64(_ v: UInt64) -> [UInt8] { ByteWriter.bigEndian(v, width: 8) }

    /// A minimal `ftyp`.
    public static let ftyp = box("ftyp", Array("isom".utf8) + u32(512) + Array("isomiso2mp41".utf8))
}

/// Reads `count` seeded random ranges of `source` (starting anywhere, 1 to `maxLength` bytes,
/// clamped to the end) and expects each to equal the same slice of `bytes`, the whole of it
/// too; a read past the end must be empty.
public func expectRandomRanges(of source: some ByteSource, equal bytes: [UInt8], count: Int, maxLength: UInt64, seed: UInt64,
                               sourceLocation: SourceLocation = #_sourceLocation) async throws {
    let size = UInt64(bytes.count)
    #expect(try await source.length() == size, sourceLocation: sourceLocation)
    var random = SeededRandom(seed: seed)
    for _ in 0..<count where size > 0 {
        let a = UInt64.random(in: 0..<size, using: &random)
        let b = min(size, a + UInt64.random(in: 1...max(maxLength, 1), using: &random))
        #expect(try await source.read(a..<b) == Array(bytes[Int(a)..<Int(b)]), "\(source.name) \(a)..<\(b)", sourceLocation: sourceLocation)
    }
    #expect(try await source.read(0..<size) == bytes, "\(source.name) whole", sourceLocation: sourceLocation)
    #expect(try await source.read(size..<(size + 10)).isEmpty, sourceLocation: sourceLocation)
}
