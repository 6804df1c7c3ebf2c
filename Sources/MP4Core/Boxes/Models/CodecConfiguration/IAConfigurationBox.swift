/// `iacb` (Immersive Audio Model and Formats §6.3): the IA configuration of an `iamf` sample
/// entry; the profiles of its sequence header, and its first codec configuration (`Opus`,
/// `mp4a`, `fLaC`, `ipcm`) with the sample rate it decodes at.
public struct IAConfigurationBox: CodecConfigurationBoxModel {
    public static let type: FourCC = "iacb"
    public static let specName = "IAConfigurationBox"
    public static let isFullBox = false

    public var primaryProfile: UInt8
    public var additionalProfile: UInt8
    public var codecID: FourCC
    /// `nil` when the codec configuration does not say (an unknown codec).
    public var sampleRate: UInt32?

    public init(primaryProfile: UInt8, additionalProfile: UInt8, codecID: FourCC, sampleRate: UInt32?) {
        self.primaryProfile = primaryProfile
        self.additionalProfile = additionalProfile
        self.codecID = codecID
        self.sampleRate = sampleRate
    }

    /// Version, then the configuration OBUs: the sequence header (type 31) gives the profiles,
    /// the first codec configuration OBU (type 0) the codec and its rate.
    public static func parse(_ reader: inout ByteReader, version: UInt8, flags: UInt32) throws -> IAConfigurationBox {
        try reader.skip(1)  // configurationVersion
        let size = try leb128(&reader)
        var obus = try reader.slice(count: Int(min(size, UInt64(reader.remaining))))
        try reader.skip(reader.remaining)
        var profiles: (UInt8, UInt8) = (0, 0)
        // Each OBU takes at least two bytes: the loop ends with the bytes.
        while obus.remaining >= 2 {
            let header = try obus.readUInt8()
            let obuSize = try leb128(&obus)
            guard obuSize <= UInt64(obus.remaining) else { break }
            var obu = try obus.slice(count: Int(obuSize))
            let type = header >> 3
            if header & 2 != 0 { _ = try leb128(&obu); _ = try leb128(&obu) }  // trimming
            if header & 1 != 0 { try obu.skip(Int(min(try leb128(&obu), UInt64(obu.remaining)))) }  // extension
            if type == 31 {  // IA sequence header: 'iamf', primary and additional profile
                try obu.skip(4)
                profiles = (try obu.readUInt8(), try obu.readUInt8())
            } else if type == 0 {  // codec config
                _ = try leb128(&obu)  // codec_config_id
                let codec = try obu.readFourCC()
                _ = try leb128(&obu)  // num_samples_per_frame
                try obu.skip(2)  // audio_roll_distance
                var rate: UInt32?
                switch codec {
                case .opus: rate = 48000  // Opus decodes at 48 kHz
                case "ipcm":
                    try obu.skip(2)  // sample_format_flags, sample_size
                    rate = try obu.readUInt32()
                case .flac:
                    try obu.skip(4)  // METADATA_BLOCK_HEADER of STREAMINFO
                    try obu.skip(10)
                    rate = try obu.readUInt32() >> 12
                case .mp4a:
                    rate = try ESDBox.parseDecoderConfig(&obu).samplingFrequency
                default: break
                }
                return IAConfigurationBox(primaryProfile: profiles.0, additionalProfile: profiles.1, codecID: codec, sampleRate: rate)
            }
        }
        throw MP4Error(.malformed, "iacb has no codec configuration OBU", offset: reader.fileOffset)
    }

    /// Reads a LEB128 value (at most 8 bytes, as IAMF allows).
    private static func leb128(_ reader: inout ByteReader) throws -> UInt64 {
        var value: UInt64 = 0
        for i in 0..<8 {
            let byte = try reader.readUInt8()
            value |= UInt64(byte & 0x7F) << UInt64(7 * i)
            if byte & 0x80 == 0 { return value }
        }
        throw MP4Error(.malformed, "a LEB128 value is longer than 8 bytes", offset: reader.fileOffset)
    }

    public var fields: [(name: String, value: FieldValue)] {
        [("primaryProfile", .uint(UInt64(primaryProfile))), ("additionalProfile", .uint(UInt64(additionalProfile))),
         ("codecID", .string(codecID.description)), ("sampleRate", .optional(sampleRate) { .uint(UInt64($0)) })]
    }

    /// `iamf.000.000.Opus`: the two profiles, three digits each, and the codec.
    public func codecString(format: FourCC) -> String {
        func pad3(_ v: UInt8) -> String { String(repeating: "0", count: 3 - String(v).count) + String(v) }
        return "iamf.\(pad3(primaryProfile)).\(pad3(additionalProfile)).\(codecID.description.trimmingTrailingSpaces)"
    }

    /// The entry's rate is a placeholder (0); this is the decoded rate.
    public var decoderSampleRate: UInt32? { sampleRate }
}
