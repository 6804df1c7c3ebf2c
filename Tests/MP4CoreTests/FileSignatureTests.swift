import Testing
import MP4TestSupport
@testable import MP4Core

/// What a file that is not MP4 is recognised as, from its first 16 bytes.
@Suite struct FileSignatureTests {
    static func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

    @Test func recognisesCommonFormats() {
        let cases: [([UInt8], String)] = [
            ([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 13], "a PNG image"),
            ([0xFF, 0xD8, 0xFF, 0xE0, 0, 16, 0x4A, 0x46], "a JPEG image"),
            (Self.bytes("GIF89a\u{01}\u{00}"), "a GIF image"),
            (Self.bytes("RIFF") + [0x24, 0, 0, 0] + Self.bytes("WAVEfmt "), "a WAV audio file"),
            (Self.bytes("RIFF") + [0x24, 0, 0, 0] + Self.bytes("AVI LIST"), "an AVI video file"),
            (Self.bytes("RIFF") + [0x24, 0, 0, 0] + Self.bytes("WEBPVP8 "), "a WebP image"),
            ([0x1A, 0x45, 0xDF, 0xA3, 0x9F, 0x42, 0x86, 0x81], "a Matroska or WebM file"),
            (Self.bytes("OggS") + [0, 2, 0, 0], "an Ogg file (Vorbis, Opus or Theora)"),
            (Self.bytes("fLaC") + [0, 0, 0, 34], "a FLAC audio file"),
            (Self.bytes("FLV") + [1, 5, 0, 0, 0, 9], "a Flash video (FLV) file"),
            (Self.bytes("ID3") + [4, 0, 0, 0, 0, 0, 0], "an MP3 file (it starts with an ID3 tag)"),
            ([0xFF, 0xFB, 0x90, 0x64, 0x00], "an MP3 audio stream"),
            ([0xFF, 0xF1, 0x50, 0x80, 0x02, 0x1F, 0xFC], "an AAC audio stream (ADTS)"),
            ([0x47, 0x40, 0x00, 0x10, 0x00, 0x00, 0xB0, 0x0D], "an MPEG transport stream (.ts)"),
            ([0x00, 0x00, 0x01, 0xBA, 0x44, 0x00], "an MPEG program stream (VOB/MPG)"),
            ([0x00, 0x00, 0x00, 0x01, 0x67, 0x64, 0x00, 0x1F], "a raw H.264/H.265 elementary stream (Annex B)"),
            (Self.bytes("%PDF-1.7\n"), "a PDF document"),
            ([0x50, 0x4B, 0x03, 0x04, 0x14, 0x00], "a ZIP archive"),
            ([0x1F, 0x8B, 0x08, 0x00], "a gzip-compressed file"),
            (Self.bytes("#EXTM3U\n#EXT-X-"), "an HLS playlist (M3U8)"),
            (Self.bytes("<!DOCTYPE html><h"), "an HTML page"),
            (Self.bytes("\n  <html lang=en>"), "an HTML page"),
            (Self.bytes("<?xml version="), "an XML document"),
            (Self.bytes("{\"error\": \"not f"), "a JSON or other text file"),
            (Self.bytes("hello world\n"), "a text file"),
            // Text that starts with 'G' (0x47, the transport stream sync byte) is still text.
            (Self.bytes("Go to the shop\n"), "a text file"),
            (Self.bytes("Grüße, Welt\n"), "a text file"),
        ]
        for (prefix, expected) in cases {
            #expect(FileSignature.identify(prefix) == expected, "\(prefix)")
        }
    }

    @Test func unknownBinaryIsNotGuessed() {
        #expect(FileSignature.identify([]) == nil)
        #expect(FileSignature.identify([0x00, 0x00, 0x00]) == nil)
        #expect(FileSignature.identify([0x13, 0x37, 0xC0, 0xDE, 0x00, 0xFF]) == nil)
        // Invalid UTF-8 is not text.
        #expect(FileSignature.identify([0x61, 0x62, 0xC3, 0x28]) == nil)
    }

    @Test func dumpShowsHexAndText() {
        #expect(FileSignature.dump(Array("hi\n".utf8) + [0x00, 0xFF]) == "68 69 0a 00 ff  |hi...|")
    }
}

/// The shared hash and hex helpers (cache keys and ETags depend on FNV-1a staying the same).
@Suite struct HashingTests {
    @Test func fnv1aKnownValues() {
        // Published FNV-1a 64 test vectors.
        #expect(FNV1a.hash([UInt8]()) == 0xcbf2_9ce4_8422_2325)
        #expect(FNV1a.hash("a".utf8) == 0xaf63_dc4c_8601_ec8c)
        #expect(FNV1a.hash("foobar".utf8) == 0x8594_4171_f739_67e8)
        // Word-wise: any single changed byte changes the hash; tails are covered.
        var block = [UInt8](repeating: 7, count: 1 << 20 | 5)
        let reference = FNV1a.hashWords(block)
        for position in [0, 8, 1 << 19, (1 << 20) + 4] {
            block[position] ^= 1
            #expect(FNV1a.hashWords(block) != reference)
            block[position] ^= 1
        }
    }

    /// The incremental word hash, fed a block in pieces of every awkward size (1 to 7 bytes,
    /// odd, word-straddling), is `hashWords` of the block: what lets a cache hash its writes
    /// instead of reading them back.
    @Test func wordsInPiecesEqualHashWords() {
        var random = SeededRandom(seed: 7)
        for size in [0, 1, 5, 8, 13, 4096, (1 << 20) + 5] {
            let block = random.bytes(size)
            for split in [1, 3, 7, 8, 9, 4093] {
                var hasher = FNV1a.Words()
                var offset = 0, step = 0
                while offset < block.count {
                    let count = min(block.count - offset, split + step % 5)
                    hasher.update(block[offset..<offset + count])
                    offset += count
                    step += 1
                }
                #expect(hasher.value == FNV1a.hashWords(block), "size \(size), pieces of about \(split)")
            }
        }
    }

    @Test func hexText() {
        #expect(Hex.bytes([0, 0x0f, 0xab], separator: " ") == "00 0f ab" && Hex.bytes([1, 2]) == "0102")
        #expect(Hex.flags(1) == "0x000001" && Hex.flags(0xFFFFFF) == "0xffffff")
    }
}
