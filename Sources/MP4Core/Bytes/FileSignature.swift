/// Recognises common files that are not MP4 by their first bytes ("magic numbers"), so that an
/// error can say what a file is instead of only what it is not.
///
/// Only formats a user is likely to hand to an MP4 tool by mistake are listed: images, other
/// media containers, archives, web pages and text. Recognition is a hint for a message, never a
/// parsing decision.
public enum FileSignature {
    /// How many leading bytes ``identify(_:)`` looks at (and errors keep for display).
    public static let prefixLength = 16

    /// What `prefix` (the first bytes of a file) looks like, as a noun phrase ("a PNG image"),
    /// or nil when it is not recognised.
    public static func identify(_ prefix: [UInt8]) -> String? {
        func starts(_ magic: [UInt8], at offset: Int = 0) -> Bool {
            prefix.count >= offset + magic.count && Array(prefix[offset..<offset + magic.count]) == magic
        }
        func ascii(_ text: String, at offset: Int = 0) -> Bool { starts(Array(text.utf8), at: offset) }

        if starts([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) { return "a PNG image" }
        if starts([0xFF, 0xD8, 0xFF]) { return "a JPEG image" }
        if ascii("GIF87a") || ascii("GIF89a") { return "a GIF image" }
        if ascii("RIFF") && ascii("WEBP", at: 8) { return "a WebP image" }
        if ascii("RIFF") && ascii("WAVE", at: 8) { return "a WAV audio file" }
        if ascii("RIFF") && ascii("AVI ", at: 8) { return "an AVI video file" }
        if ascii("RIFF") { return "a RIFF file" }
        if starts([0x1A, 0x45, 0xDF, 0xA3]) { return "a Matroska or WebM file" }
        if ascii("OggS") { return "an Ogg file (Vorbis, Opus or Theora)" }
        if ascii("fLaC") { return "a FLAC audio file" }
        if ascii("FLV") && prefix.count > 3 && prefix[3] == 1 { return "a Flash video (FLV) file" }
        if ascii("ID3") { return "an MP3 file (it starts with an ID3 tag)" }
        if ascii("#EXTM3U") { return "an HLS playlist (M3U8)" }
        if ascii("%PDF-") { return "a PDF document" }
        if starts([0x50, 0x4B, 0x03, 0x04]) { return "a ZIP archive" }
        if starts([0x1F, 0x8B]) { return "a gzip-compressed file" }
        if starts([0x7F, 0x45, 0x4C, 0x46]) { return "an ELF executable" }
        if starts([0x00, 0x00, 0x01, 0xBA]) { return "an MPEG program stream (VOB/MPG)" }
        if starts([0x00, 0x00, 0x00, 0x01]) || starts([0x00, 0x00, 0x01]) { return "a raw H.264/H.265 elementary stream (Annex B)" }
        if starts([0xEF, 0xBB, 0xBF]) || isText(prefix) {
            let body = prefix.drop { $0 == 0xEF || $0 == 0xBB || $0 == 0xBF || $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }
            let lower = String(decoding: body.prefix(15), as: UTF8.self).lowercased()
            if lower.hasPrefix("<!doctype html") || lower.hasPrefix("<html") || lower.hasPrefix("<head") { return "an HTML page" }
            if lower.hasPrefix("<?xml") { return "an XML document" }
            if lower.hasPrefix("{") || lower.hasPrefix("[") { return "a JSON or other text file" }
            return "a text file"
        }
        // MPEG-TS: a 0x47 sync byte every 188 bytes; with 16 bytes only the first is visible.
        if starts([0x47]) && prefix.count >= 4 && prefix[1] & 0x80 == 0 && prefix[3] & 0x30 != 0 { return "an MPEG transport stream (.ts)" }
        if prefix.count >= 2 && prefix[0] == 0xFF && prefix[1] & 0xF6 == 0xF0 { return "an AAC audio stream (ADTS)" }
        if prefix.count >= 2 && prefix[0] == 0xFF && prefix[1] & 0xE0 == 0xE0 { return "an MP3 audio stream" }
        return nil
    }

    /// Whether every byte is printable ASCII, a tab or a line break, or part of a valid UTF-8
    /// sequence (a sequence cut off at the end of the prefix counts as valid).
    static func isText(_ bytes: [UInt8]) -> Bool {
        guard !bytes.isEmpty else { return false }
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            if byte == 0x09 || byte == 0x0A || byte == 0x0D || (0x20...0x7E).contains(byte) {
                index += 1
                continue
            }
            let length: Int
            switch byte {
            case 0xC2...0xDF: length = 2
            case 0xE0...0xEF: length = 3
            case 0xF0...0xF4: length = 4
            default: return false
            }
            for next in index + 1..<min(index + length, bytes.count) where bytes[next] & 0xC0 != 0x80 { return false }
            index += length
        }
        return true
    }

    /// `bytes` as hex pairs and as text (`.` for bytes that are not printable ASCII), the way
    /// `hexdump -C` shows them: `68 65 6c 6c 6f  |hello|`.
    public static func dump(_ bytes: [UInt8]) -> String {
        let hex = Hex.bytes(bytes, separator: " ")
        let text = String(bytes.map { (0x20...0x7E).contains($0) ? Character(UnicodeScalar($0)) : "." })
        return "\(hex)  |\(text)|"
    }
}
