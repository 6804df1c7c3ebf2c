/// The start of a DTS core frame header (ETSI TS 102 114, 5.3.1): what a decoder takes the
/// sample rate and channels from, whatever the sample entry says. Big-endian 16-bit words
/// (sync `7FFE8001`) or little-endian ones (`FE7F0180`); the 14-bit forms are not read.
struct DTSCoreHeader: Sendable, Hashable {
    /// The core sampling frequency (SFREQ), Hz.
    var sampleRate: UInt32
    /// Channels: the audio channel arrangement (AMODE) plus the LFE channel (LFF); nil for a
    /// user-defined arrangement (AMODE 16 and above).
    var channelCount: UInt32?

    /// SFREQ → Hz (0: invalid).
    static let rates: [UInt32] = [0, 8000, 16000, 32000, 0, 0, 11025, 22050, 44100, 0, 0, 12000, 24000, 48000, 0, 0]
    /// AMODE → channels (10 to 15 are user-defined; decoders take these counts).
    static let channels: [UInt32] = [1, 2, 2, 2, 2, 3, 3, 4, 4, 5, 6, 6, 6, 7, 8, 8]

    /// Reads the header from the first 11 bytes of a frame; nil without a sync word, with an
    /// invalid rate, or with fewer bytes.
    init?(_ bytes: ArraySlice<UInt8>) {
        guard bytes.count >= 11 else { return nil }
        var frame = Array(bytes.prefix(12))
        if frame.starts(with: [0xFE, 0x7F, 0x01, 0x80]) {
            // Little-endian words: swap each pair.
            if frame.count % 2 == 1 { frame.append(0) }
            for index in stride(from: 0, to: frame.count, by: 2) { frame.swapAt(index, index + 1) }
        }
        guard frame.starts(with: [0x7F, 0xFE, 0x80, 0x01]) else { return nil }
        /// `count` bits from bit `offset` (0: the first bit of the sync word).
        func bits(_ offset: Int, _ count: Int) -> Int {
            var value = 0
            for bit in offset..<(offset + count) { value = value << 1 | Int(frame[bit / 8] >> (7 - UInt8(bit % 8)) & 1) }
            return value
        }
        let rate = Self.rates[bits(66, 4)]
        guard rate > 0 else { return nil }
        sampleRate = rate
        let arrangement = bits(60, 6)
        channelCount = arrangement < Self.channels.count ? Self.channels[arrangement] + (bits(85, 2) != 0 ? 1 : 0) : nil
    }
}
