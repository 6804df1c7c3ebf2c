/// One entry of `stsd` (ISO/IEC 14496-12 §8.5.2, QuickTime sound/video descriptions):
/// the format four-character code, the fields of its visual/audio/text layout, and the codec
/// configuration found among its child boxes.
public struct SampleEntry: Sendable, Hashable {
    /// The layout an entry uses.
    public enum Kind: String, Sendable, Hashable, Codable {
        case video, audio, text, metadata, other
    }

    /// The entry's box type (`avc1`, `mp4a`, `encv`, ...).
    public var format: FourCC
    /// Which layout was parsed.
    public var kind: Kind
    /// 1-based index into `dref`.
    public var dataReferenceIndex: UInt16
    /// Coded width (video).
    public var width: UInt16?
    /// Coded height (video).
    public var height: UInt16?
    /// Compressor name (video), often the encoder.
    public var compressorName: String?
    /// Channel count (audio; from the QuickTime v2 layout when used).
    public var channelCount: UInt32?
    /// Bits per sample (audio).
    public var sampleSize: UInt16?
    /// Sample rate in Hz (audio).
    public var sampleRate: Double?
    /// QuickTime sound description version (0, 1, 2), for audio.
    public var soundVersion: UInt16?
    /// For protected entries (`encv`, `enca`, ...): the original format from `sinf/frma`.
    public var originalFormat: FourCC?
    /// For protected entries: the protection scheme from `sinf/schm` (`cenc`, `cbcs`, ...).
    public var protectionScheme: FourCC?
    /// For `stpp` and `metx`: the XML namespace.
    public var textNamespace: String?
    /// For `mett`, `sbtt` and `stxt`: the MIME type of the samples; for `stpp`, the auxiliary MIME types.
    public var mimeFormat: String?
    /// For `mett`, `metx`, `sbtt` and `stxt`: the content encoding (empty: none).
    public var contentEncoding: String?
    /// The decoder configuration, when a known configuration box is present.
    public var configuration: CodecConfiguration?
    /// `pasp`: the pixel aspect ratio.
    public var pixelAspectRatio: PixelAspectRatioBox?
    /// `colr`: colour primaries, transfer, matrix, range (or an ICC profile).
    public var colour: ColourInformationBox?
    /// `btrt`: the declared buffer size and bit rates.
    public var declaredBitRate: BitRateBox?
    /// `fiel` (QuickTime): progressive or the field order.
    public var fieldHandling: FieldHandlingBox?
    /// `mdcv`: the HDR mastering display.
    public var masteringDisplay: MasteringDisplayColourVolumeBox?
    /// `clli`: HDR content light levels.
    public var contentLightLevel: ContentLightLevelBox?
    /// `dvcC`, `dvvC` or `dvwC`: the Dolby Vision profile and level.
    public var dolbyVision: DolbyVision?

    /// A Dolby Vision configuration (ETSI / Dolby's ISOBMFF binding: `dv_profile`, `dv_level`).
    public struct DolbyVision: Sendable, Hashable, Codable {
        public var profile: UInt8
        public var level: UInt8
    }

    /// The transfer function `colr` names, as ffprobe names it (`bt709`, `smpte2084` for PQ,
    /// `arib-std-b67` for HLG); nil without code points.
    public var transfer: String? {
        guard case .codePoints(_, let transfer, _, _)? = colour?.colour else { return nil }
        let names: [UInt16: String] = [1: "bt709", 4: "bt470m", 5: "bt470bg", 6: "smpte170m", 7: "smpte240m", 8: "linear", 11: "iec61966-2-4",
                                       12: "bt1361e", 13: "iec61966-2-1", 14: "bt2020-10", 15: "bt2020-12", 16: "smpte2084", 17: "smpte428", 18: "arib-std-b67"]
        return names[transfer] ?? (transfer == 2 ? nil : "\(transfer)")
    }

    /// The HDR signalling: `Dolby Vision`, `HDR10` (PQ with a mastering display), `PQ`
    /// (without one), `HLG`; nil for SDR or when nothing says.
    public var hdr: String? {
        if dolbyVision != nil || ["dvh1", "dvhe", "dav1", "dva1", "dvav", "dva1"].contains(codingFormat.description) { return "Dolby Vision" }
        switch transfer {
        case "smpte2084": return masteringDisplay != nil ? "HDR10" : "PQ"
        case "arib-std-b67": return "HLG"
        default: return nil
        }
    }
    /// For MPEG-1/2 audio (MP3) and DTS: the channel count of the first frame header, when it
    /// was read (``MP4File/Facts/frameHeaders``).
    public var frameHeaderChannelCount: UInt32?
    /// For DTS: the core sample rate of the first frame header, when it was read (the sample
    /// entry's field may say otherwise: 48,000 where the frames are 24,000 Hz).
    public var frameHeaderSampleRate: UInt32?
    /// Whether the rate or channels a decoder produces came from the first frame header
    /// (``frameHeaderSampleRate``, ``frameHeaderChannelCount``) rather than the entry or its
    /// configuration.
    public var audioFromFrameHeader: Bool { frameHeaderSampleRate != nil || frameHeaderChannelCount != nil }

    /// The picture size the codec configuration's first parameter set gives (H.264, H.265),
    /// when it parses: what a decoder outputs and ffprobe reports.
    public var parameterSetSize: PictureSize? { configuration?.box.codedPictureSize }
    /// Whether the parameter set's picture size differs from the entry's ``width`` and
    /// ``height`` (a writer put another size there): ``pictureWidth`` is then the parameter set's.
    public var sizeFromParameterSet: Bool {
        guard let size = parameterSetSize else { return false }
        return width.map(UInt32.init) != size.width || height.map(UInt32.init) != size.height
    }
    /// The picture width a decoder outputs: the parameter set's, else the entry's.
    public var pictureWidth: UInt16? { parameterSetSize.map { UInt16($0.width) } ?? width }
    /// The picture height a decoder outputs (see ``pictureWidth``).
    public var pictureHeight: UInt16? { parameterSetSize.map { UInt16($0.height) } ?? height }

    /// Whether the entry carries DTS: `dtsc`, `dtsh`, `dtsl`, `dtse` entries, or `mp4a` with
    /// object type 0xA9 to 0xAC.
    public var isDTS: Bool {
        if ["dtsc", "dtsh", "dtsl", "dtse"].contains(codingFormat.description) { return true }
        return configuration?.as(ESDBox.self)?.isDTS ?? false
    }

    /// Whether the entry carries MPEG-1/2 audio (MP3, MP2): `.mp3`/`mp3 ` entries, or `mp4a`
    /// with object type 0x69 or 0x6B.
    public var isMPEGAudio: Bool {
        if codingFormat == ".mp3" || codingFormat == "mp3 " { return true }
        return configuration?.as(ESDBox.self)?.isMPEGAudio ?? false
    }

    /// The channel count a decoder produces: from the codec configuration when it says
    /// (AudioSpecificConfig, `dOps`, `dac3`, `alac`, `dfLa`), else the sample entry's field,
    /// which ISO writers often leave at the placeholder 2.
    public var effectiveChannelCount: UInt32? {
        if let frameHeaderChannelCount { return frameHeaderChannelCount }
        if let channels = configuration?.box.decoderChannelCount { return channels }
        // AMR is mono by definition; the field is often the placeholder 2.
        if codingFormat == "samr" || codingFormat == "sawb" { return 1 }
        return channelCount
    }

    /// The sample rate a decoder produces: the first frame header's for DTS when it was read,
    /// 48 kHz for Opus (its decoders always run at 48 kHz;
    /// the entry may carry the input rate), 8/16 kHz for AMR narrow/wide band, the codec
    /// configuration's rate for TrueHD and IAMF (the entry holds a placeholder), else the
    /// entry's field. `nil` when unknown (an IAMF entry's 0).
    public var effectiveSampleRate: Double? {
        if let frameHeaderSampleRate { return Double(frameHeaderSampleRate) }
        switch codingFormat {
        case .opus: return 48000
        case "samr": return 8000
        case "sawb": return 16000
        default:
            if let rate = configuration?.box.decoderSampleRate { return Double(rate) }
            return codingFormat == "iamf" || codingFormat == "mlpa" ? nil : sampleRate
        }
    }

    /// The format that describes the coded data: ``originalFormat`` when the entry is
    /// protected, else ``format``.
    public var codingFormat: FourCC { originalFormat ?? format }

    /// The RFC 6381 codec string (`avc1.64001F`, `mp4a.40.2`, `opus`), or the format code
    /// when no configuration is known.
    public var codecString: String {
        let coding = codingFormat
        if let configuration { return configuration.codecString(format: coding) }
        switch coding {
        case .opus: return "opus"
        case .flac: return "flac"
        default: return coding.description.trimmingTrailingSpaces
        }
    }

    /// Formats that use the visual sample entry layout even outside a `vide` track.
    static let videoFormats: Set<FourCC> = [
        "avc1", "avc2", "avc3", "avc4", "hvc1", "hev1", "dvh1", "dvhe", "dav1", "dva1", "dvav", "av01", "vp08", "vp09", "mp4v",
        "encv", "vvc1", "vvi1", "s263", "h263", "jpeg", "mjpa", "mjpb", "png ", "apch", "apcn", "apcs", "apco", "ap4h", "ap4x",
        "2vuy", "yuv2", "v210", "mvc1", "mvc2", "avs3", "hvt1", "lhv1", "lhe1", "raw ", "rle ", "smc ", "tiff", "MPEG", "cvid",
    ]
    /// Formats that use the audio sample entry layout even outside a `soun` track.
    static let audioFormats: Set<FourCC> = [
        "mp4a", "enca", "Opus", "ac-3", "ec-3", "ac-4", "alac", "fLaC", "lpcm", "sowt", "twos", "ipcm", "fpcm", "samr", "sawb",
        "sawp", "mha1", "mha2", "mhm1", "mhm2", ".mp3", "mp3 ", "dtsc", "dtsh", "dtsl", "dtse", "dtsx", "iamf", "in24", "in32",
        "fl32", "fl64", "ulaw", "alaw", "ima4", "MAC3", "MAC6", "Qclp", "QDM2", "QDMC", "nmos", "spex", "dtsy", "mlpa", "NONE",
    ]
    static let textFormats: Set<FourCC> = ["tx3g", "text", "wvtt", "stpp", "sbtt", "stxt", "c608", "c708"]
    static let metadataFormats: Set<FourCC> = ["mett", "metx", "urim", "mebx", "tmcd", "rtp ", "srtp", "fdp "]

    /// Chooses the layout for an entry of `format` inside a track whose handler is `handler`.
    static func kind(format: FourCC, handler: FourCC?) -> Kind {
        if audioFormats.contains(format) { return .audio }
        if videoFormats.contains(format) { return .video }
        if textFormats.contains(format) { return .text }
        if metadataFormats.contains(format) { return .metadata }
        switch handler {
        case .vide?: return .video
        case .soun?: return .audio
        case .text?, .sbtl?, .subt?, .clcp?: return .text
        default: return .other
        }
    }

    /// Parses the fixed fields of an entry and leaves `reader` at its first child box.
    ///
    /// - Parameters:
    ///   - format: the entry's box type.
    ///   - handler: the track's handler type, which decides the layout of unknown formats.
    /// - Returns: the entry (configuration not yet filled in) and whether the rest of the
    ///   payload is a list of child boxes.
    /// - Throws: ``MP4Error/Kind/truncated`` when the fixed fields do not fit.
    public static func parseFixedFields(format: FourCC, handler: FourCC?, _ reader: inout ByteReader) throws -> (SampleEntry, hasChildren: Bool) {
        var entry = SampleEntry(format: format, kind: kind(format: format, handler: handler), dataReferenceIndex: 0)
        try reader.skip(6)
        entry.dataReferenceIndex = try reader.readUInt16()
        switch entry.kind {
        case .video:
            try reader.skip(16)
            entry.width = try reader.readUInt16()
            entry.height = try reader.readUInt16()
            try reader.skip(14)  // resolution, reserved, frame count
            let nameBytes = try reader.readBytes(32)
            let length = Int(nameBytes[nameBytes.startIndex])
            entry.compressorName = String(decoding: nameBytes.dropFirst().prefix(min(length, 31)), as: UTF8.self)
            try reader.skip(4)  // depth, pre_defined
            return (entry, true)
        case .audio:
            let version = try reader.readUInt16()
            entry.soundVersion = version
            try reader.skip(6)
            entry.channelCount = UInt32(try reader.readUInt16())
            entry.sampleSize = try reader.readUInt16()
            try reader.skip(4)
            entry.sampleRate = Double(try reader.readUInt32()) / 65536
            if version == 1, looksLikeBoxList(reader, skipping: 16) || reader.remaining == 16 {
                try reader.skip(16)  // QuickTime v1: samples per packet, bytes per packet/frame/sample
            } else if version == 2, reader.remaining >= 36 {
                try reader.skip(4)
                let rate = Double(bitPattern: try reader.readUInt64())
                entry.sampleRate = rate.isFinite ? rate : nil
                entry.channelCount = try reader.readUInt32()
                try reader.skip(4)
                let bits = try reader.readUInt32()
                entry.sampleSize = UInt16(truncatingIfNeeded: bits)
                try reader.skip(12)
            }
            return (entry, true)
        case .text, .metadata:
            let hasChildren = try parseTextOrMetadataFields(&entry, &reader)
            return (entry, hasChildren)
        case .other:
            return (entry, false)
        }
    }

    /// The fixed fields of the text and metadata entries (ISO/IEC 14496-12 §12.3.3, §12.5.3,
    /// §12.6.3, hint entries §9.1.2 and §9.2; ISO/IEC 14496-30 for `stpp` and `wvtt`; 3GPP TS
    /// 26.245 for `tx3g`; QuickTime for `tmcd`): null-terminated strings or fixed bytes before the child boxes. Returns
    /// whether child boxes follow. A string field cut short by the entry's end is read to
    /// that end (what players do); an entry that holds child boxes where its strings should
    /// be (a writer that left them out) is read as boxes.
    static func parseTextOrMetadataFields(_ entry: inout SampleEntry, _ reader: inout ByteReader) throws -> Bool {
        switch entry.format.description {
        case "tx3g":
            try reader.skip(30)   // display flags, justification, background colour, default box and style
            return true
        case "wvtt", "urim", "mebx":
            return true           // only child boxes
        case "tmcd":
            try reader.skip(18)   // reserved, flags, timescale, frame duration, frames, reserved
            return true
        case "rtp ", "srtp", "fdp ":
            try reader.skip(8)    // hint track versions, then the maximum packet size (RTP) or partition and FEC overhead (FD)
            return true
        case "stpp":
            let fields = stringFields(3, &reader)
            entry.textNamespace = fields.first
            entry.mimeFormat = fields.count > 2 && !fields[2].isEmpty ? fields[2] : nil
            return true
        case "metx":
            let fields = stringFields(3, &reader)
            entry.contentEncoding = fields.first.flatMap { $0.isEmpty ? nil : $0 }
            entry.textNamespace = fields.count > 1 ? fields[1] : nil
            return true
        case "mett", "sbtt", "stxt":
            let fields = stringFields(2, &reader)
            entry.contentEncoding = fields.first.flatMap { $0.isEmpty ? nil : $0 }
            entry.mimeFormat = fields.count > 1 ? fields[1] : nil
            return true
        default:
            return false
        }
    }

    /// Reads `count` null-terminated UTF-8 strings, unless the entry's payload starts with a
    /// box list and not with strings (then nothing is read and `[]` returned).
    static func stringFields(_ count: Int, _ reader: inout ByteReader) -> [String] {
        var probe = reader
        var fields: [String] = []
        for _ in 0..<count where probe.remaining > 0 { fields.append(probe.readCString()) }
        // Strings that end in the middle of the payload must leave a box list (or nothing)
        // behind; a box header read as strings leaves neither.
        if probe.remaining > 0 && !looksLikeBoxList(probe, skipping: 0) && looksLikeBoxList(reader, skipping: 0) { return [] }
        reader = probe
        return fields
    }

    /// Whether, after skipping `count` bytes, the remaining bytes start with a plausible box
    /// header (used to tell QuickTime's extended sound description from the ISO layout).
    static func looksLikeBoxList(_ reader: ByteReader, skipping count: Int) -> Bool {
        var probe = reader
        guard (try? probe.skip(count)) != nil, probe.remaining >= 8,
              let size = try? probe.readUInt32(), let type = try? probe.readFourCC()
        else { return false }
        return size >= 8 && UInt64(size) <= UInt64(probe.remaining + 8) && type.isPrintable
    }

    /// Fills in the codec configuration and protection info from the entry's parsed children
    /// (the configuration box, possibly inside QuickTime's `wave`; `sinf/frma`, `sinf/schm`).
    mutating func complete(children: [BoxNode]) {
        for child in children {
            if let box = child.model(PixelAspectRatioBox.self) { pixelAspectRatio = pixelAspectRatio ?? box }
            if let box = child.model(ColourInformationBox.self) { colour = colour ?? box }
            if let box = child.model(BitRateBox.self) { declaredBitRate = declaredBitRate ?? box }
            if let box = child.model(FieldHandlingBox.self) { fieldHandling = fieldHandling ?? box }
            if let box = child.model(MasteringDisplayColourVolumeBox.self) { masteringDisplay = masteringDisplay ?? box }
            if let box = child.model(ContentLightLevelBox.self) { contentLightLevel = contentLightLevel ?? box }
            if ["dvcC", "dvvC", "dvwC"].contains(child.type.description), dolbyVision == nil, child.payload.count >= 4 {
                let bytes = Array(child.payload.prefix(4))
                dolbyVision = DolbyVision(profile: bytes[2] >> 1, level: (bytes[2] & 1) << 5 | bytes[3] >> 3)
            }
            if let configuration = child.codecConfiguration {
                if self.configuration == nil { self.configuration = configuration }
            } else if child.type == .sinf || child.type == .wave {
                for inner in child.children {
                    if let frma = inner.model(OriginalFormatBox.self) {
                        if child.type == .sinf { originalFormat = frma.dataFormat }
                    } else if let schm = inner.model(SchemeTypeBox.self) {
                        protectionScheme = schm.schemeType
                    } else if let configuration = inner.codecConfiguration, self.configuration == nil {
                        self.configuration = configuration
                    }
                }
            }
        }
    }

    /// The fields a dump shows (`mp4probe boxes`), in order.
    public var fields: [(name: String, value: FieldValue)] {
        var fields: [(name: String, value: FieldValue)] = [("codec", .string(codecString)), ("dataReferenceIndex", .uint(UInt64(dataReferenceIndex)))]
        if let width, let height { fields += [("width", .uint(UInt64(width))), ("height", .uint(UInt64(height)))] }
        if let compressorName, !compressorName.isEmpty { fields.append(("compressorName", .string(compressorName))) }
        if let channelCount { fields.append(("channelCount", .uint(UInt64(channelCount)))) }
        if let sampleSize { fields.append(("sampleSize", .uint(UInt64(sampleSize)))) }
        if let sampleRate { fields.append(("sampleRate", .double(sampleRate))) }
        if let soundVersion, soundVersion > 0 { fields.append(("soundVersion", .uint(UInt64(soundVersion)))) }
        if let originalFormat { fields.append(("originalFormat", .string(originalFormat.description))) }
        if let protectionScheme { fields.append(("protectionScheme", .string(protectionScheme.description))) }
        if let textNamespace { fields.append(("namespace", .string(textNamespace))) }
        if let mimeFormat { fields.append(("mimeFormat", .string(mimeFormat))) }
        if let contentEncoding { fields.append(("contentEncoding", .string(contentEncoding))) }
        return fields
    }
}

extension String {
    var trimmingTrailingSpaces: String {
        var copy = self
        while copy.hasSuffix(" ") { copy.removeLast() }
        return copy
    }
}
