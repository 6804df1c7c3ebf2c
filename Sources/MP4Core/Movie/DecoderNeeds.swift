/// What a decoder of one track needs around a seek, beyond the samples it presents: how far
/// before the first presented sample decoding must start (pre-roll), and whether the sample
/// after the last presented one must be readable too.
///
/// Sources, in order of precedence:
/// 1. A signalled pre-roll: the track's `sgpd` of grouping type `roll` with a negative
///    `roll_distance` (ISO/IEC 14496-12 §10.1, audio pre-roll) or `prol` (§10.5).
/// 2. The codec: Opus needs 80 ms (RFC 7845 §4.6); MDCT codecs with overlapping windows (AAC,
///    MPEG audio, AC-3, E-AC-3, AC-4, DTS, Vorbis) need the frame before, whose second half is
///    overlapped with the first presented one; PCM, FLAC and ALAC frames decode alone.
/// 3. Stream parsers that find a frame's end at the next frame's sync word (ffmpeg parses
///    AC-3, E-AC-3, MPEG audio, DTS and MLP/TrueHD this way in MP4) emit the last frame only
///    when the following one has been read: those tracks need one more sample at the end.
public struct DecoderNeeds: Sendable, Hashable {
    /// How far before the first presented sample decoding must begin.
    public enum Preroll: Sendable, Hashable {
        /// Nothing: every sample decodes on its own (PCM, FLAC, ALAC), or sync samples
        /// decide (video).
        case none
        /// A number of samples.
        case samples(Int)
        /// A duration in seconds (Opus: 0.08).
        case seconds(Double)
    }

    /// The pre-roll.
    public var preroll: Preroll
    /// Where the pre-roll comes from: `sgpd roll`, `sgpd prol`, `opus`, `mdct-overlap`, or
    /// `none`.
    public var prerollSource: String
    /// Whether the sample after the last presented one must be read too (parser look-ahead).
    public var needsFollowingSample: Bool

    /// Nothing beyond the presented samples.
    public static let nothing = DecoderNeeds(preroll: .none, prerollSource: "none", needsFollowingSample: false)

    /// The needs of `track`, whose sample table box is `stbl` (for signalled roll groups).
    public static func of(_ track: Track, stbl: BoxNode?) -> DecoderNeeds {
        guard track.kind == .audio, let entry = track.sampleEntries.first else { return .nothing }
        let format = entry.codingFormat.description
        var needs = DecoderNeeds.nothing
        switch format {
        case "Opus", "opus":
            needs.preroll = .seconds(0.08)
            needs.prerollSource = "opus"
        case "sowt", "twos", "lpcm", "ipcm", "fpcm", "in24", "in32", "fl32", "fl64", "raw ", "NONE", "alaw", "ulaw", "fLaC", "alac":
            break
        default:
            needs.preroll = .samples(1)
            needs.prerollSource = "mdct-overlap"
        }
        switch format {
        case "ac-3", "ec-3", ".mp3", "mp3 ", "dtsc", "dtsh", "dtsl", "dtse", "mlpa":
            needs.needsFollowingSample = true
        case "mp4a":
            // MPEG-1/2 audio carried as mp4a (object types 0x69, 0x6B) is parsed like .mp3.
            if entry.configuration?.as(ESDBox.self)?.isMPEGAudio == true {
                needs.needsFollowingSample = true
            }
        default:
            break
        }
        if let stbl, let signalled = signalledPreroll(stbl) {
            needs.preroll = .samples(signalled.samples)
            needs.prerollSource = signalled.source
        }
        return needs
    }

    /// The largest pre-roll (in samples) that `stbl`'s sample group descriptions signal, from
    /// `roll` entries with a negative distance or `prol` entries. Reads only the `sgpd`
    /// payloads; every count is checked against the bytes present, and distances are 16-bit,
    /// so the result is at most 32,768.
    static func signalledPreroll(_ stbl: BoxNode) -> (samples: Int, source: String)? {
        var best: (samples: Int, source: String)?
        for sgpd in stbl.all("sgpd") {
            // A node's payload starts after the box header, with the full box's version and
            // flags in its first 4 bytes.
            let bytes = sgpd.payload
            guard bytes.count >= 4 else { continue }
            let version = bytes[bytes.startIndex]
            var reader = ByteReader(Array(bytes.dropFirst(4)))
            guard let grouping = try? reader.readFourCC() else { continue }
            let type = grouping.description
            guard type == "roll" || type == "prol" else { continue }
            var defaultLength: UInt32 = 0
            if version >= 1 { defaultLength = (try? reader.readUInt32()) ?? 0 }
            if version >= 2 { _ = try? reader.readUInt32() }
            guard let count = try? reader.readUInt32() else { continue }
            // Each entry takes at least 2 bytes: the count cannot exceed what is present.
            for _ in 0..<min(Int(count), reader.remaining / 2) {
                var length = defaultLength
                if version >= 1 && defaultLength == 0 { guard let l = try? reader.readUInt32() else { break }; length = l }
                guard let distance = try? reader.readInt16() else { break }
                if version >= 1 && length > 2 { guard (try? reader.skip(Int(min(length - 2, UInt32(Int32.max))))) != nil else { break } }
                let samples: Int
                if type == "roll" {
                    guard distance < 0 else { continue }
                    samples = -Int(distance)
                } else {
                    samples = abs(Int(distance))
                }
                if samples > (best?.samples ?? -1) { best = (samples, "sgpd \(type)") }
            }
        }
        return best
    }
}
