/// The ingest rules of the platforms users upload to, as ``CheckPolicy`` values
/// (`check --preset NAME`), each rule with where it comes from. Only rules the boxes and sample
/// tables can answer are here; a platform's recommendations (Cloudflare's 30 fps) are not
/// rules. docs/check.md lists every rule with its source and how it was read.
public enum CheckPreset: String, Sendable, CaseIterable {
    case youtube
    case mux
    case cloudflare
    case appleHLS = "apple-hls"

    /// One rule of a preset: the policy key, its value, and where it comes from.
    public struct Rule: Sendable, Hashable {
        public var key: String
        public var value: String
        public var source: String
    }

    static let youtubeSource = "YouTube Help, Recommended upload encoding settings"
    static let muxSource = "Mux docs, Standard input specs"
    static let cloudflareSource = "Cloudflare Stream docs, Upload video: supported formats and limits"
    static let appleSource = "Apple, HTTP Live Streaming (HLS) Authoring Specification for Apple Devices"

    /// The preset's rules, in the order docs/check.md lists them.
    public var rules: [Rule] {
        switch self {
        case .youtube:
            return [
                Rule(key: "editLists", value: "\"none\"", source: Self.youtubeSource + ": no edit lists (or the video might not get processed correctly)"),
                Rule(key: "maxConsecutiveBFrames", value: "2", source: Self.youtubeSource + ": 2 consecutive B frames"),
                Rule(key: "requireClosedGOP", value: "true", source: Self.youtubeSource + ": closed GOP"),
                Rule(key: "allowInterlaced", value: "false", source: Self.youtubeSource + ": progressive scan (no interlacing)"),
                Rule(key: "allowAudioChannels", value: "[2, 6]", source: Self.youtubeSource + ": channels stereo or stereo + 5.1"),
                Rule(key: "allowAudioSampleRates", value: "[48000, 96000]", source: Self.youtubeSource + ": sample rate 96 kHz or 48 kHz"),
            ]
        case .mux:
            return [
                Rule(key: "maxBitDepth", value: "{\"avc\": 8, \"hevc\": 10}", source: Self.muxSource + ": 8-bit 4:2:0, or 10-bit 4:2:0 if HEVC"),
                Rule(key: "allowChroma", value: "[\"4:2:0\"]", source: Self.muxSource + ": 8-bit 4:2:0"),
                Rule(key: "requireClosedGOP", value: "true", source: Self.muxSource + ": closed GOP"),
                Rule(key: "editLists", value: "\"offset\"", source: Self.muxSource + ": simple edit lists only"),
                Rule(key: "maxVideoBitRate", value: "8000000", source: Self.muxSource + ": 8 Mbps or lower"),
                Rule(key: "maxGOPBitRate", value: "16000000", source: Self.muxSource + ": 16 Mbps per GOP"),
            ]
        case .cloudflare:
            return [
                Rule(key: "maxFileSize", value: "30000000000", source: Self.cloudflareSource + ": 30 GB"),
                Rule(key: "allowInterlaced", value: "false", source: Self.cloudflareSource + ": progressive (interlaced is not supported)"),
                Rule(key: "requireClosedGOP", value: "true", source: Self.cloudflareSource + ": closed GOP"),
            ]
        case .appleHLS:
            return [
                Rule(key: "maxFrameRate", value: "60", source: Self.appleSource + ": frame rates up to 60 fps"),
                Rule(key: "allowInterlaced", value: "false", source: Self.appleSource + ": interlaced content must be de-interlaced"),
                Rule(key: "allowHDR", value: "[\"HDR10\", \"Dolby Vision\"]", source: Self.appleSource + ": HDR as HDR10 or Dolby Vision, with mastering metadata"),
                Rule(key: "fragmentedCodecs", value: "[\"hvc1\", \"hev1\"]", source: Self.appleSource + ": HEVC in fragmented MP4"),
            ]
        }
    }

    /// The preset as a policy: the defaults with its rules applied, and faststart not required:
    /// none of the four platforms requires it (YouTube and Cloudflare recommend `moov` at the
    /// front, Mux does not mention it), so a moov-at-end film passes with a `not-faststart`
    /// warning (it failed all but Apple's).
    public var policy: CheckPolicy {
        let document = "{\"requireFaststart\": false" + rules.map { ", \"\($0.key)\": \($0.value)" }.joined() + "}"
        // The rules are this file's literals; `PresetTests` parses every preset.
        return (try? CheckPolicy.parse(document: Array(document.utf8))) ?? CheckPolicy()
    }
}
