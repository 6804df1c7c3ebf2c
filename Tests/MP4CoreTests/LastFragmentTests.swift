import Testing
@testable import MP4Core

/// Finding the last movie fragment in a file's end (``LastFragment``): the `moof` whose boxes
/// chain to the end of the file, not bytes that spell `moof` inside media data.
@Suite struct LastFragmentTests {
    static func box(_ type: String, _ payload: [UInt8]) -> [UInt8] {
        let size = UInt32(8 + payload.count)
        return [UInt8(size >> 24), UInt8(size >> 16 & 0xFF), UInt8(size >> 8 & 0xFF), UInt8(size & 0xFF)] + Array(type.utf8) + payload
    }

    @Test func theLastMoofIsTheOneThatChainsToTheEnd() {
        // mdat whose media spell a "moof" header, then the real last moof and its mdat.
        let fake = Self.box("moof", [UInt8](repeating: 0, count: 8))
        let first = Self.box("mdat", [UInt8](repeating: 7, count: 100) + fake + [UInt8](repeating: 7, count: 50))
        let moof = Self.box("moof", Self.box("mfhd", [0, 0, 0, 0, 0, 0, 0, 2]))
        let last = Self.box("mdat", [UInt8](repeating: 9, count: 300))
        let file = [UInt8](repeating: 1, count: 1000) + first + moof + last
        let start: UInt64 = 900
        let tail = file[900...]
        let found = LastFragment.lastMovieFragment(in: tail, start: start, fileSize: UInt64(file.count))
        let expected = UInt64(1000 + first.count)
        #expect(found == expected..<(expected + UInt64(moof.count)))
        // A tail whose last boxes do not reach the end (a truncated file): nothing.
        let cut = Array(file.dropLast(10))
        #expect(LastFragment.lastMovieFragment(in: cut[900...], start: start, fileSize: UInt64(cut.count)) == nil)
        // A tail that is not the file's end: nothing.
        #expect(LastFragment.lastMovieFragment(in: tail.dropLast(), start: start, fileSize: UInt64(file.count)) == nil)
    }

    /// Hostile sizes (0, 1 with a huge largesize, past the end) neither trap nor loop.
    @Test func hostileSizesAreRefused() {
        var bytes = Self.box("moof", [UInt8](repeating: 0, count: 8))
        bytes += [0, 0, 0, 1] + Array("mdat".utf8) + [0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF]
        #expect(LastFragment.lastMovieFragment(in: bytes[...], start: 0, fileSize: UInt64(bytes.count)) == nil)
        let zero = Self.box("moof", [UInt8](repeating: 0, count: 8)) + [0, 0, 0, 0] + Array("mdat".utf8) + [1, 2, 3]
        #expect(LastFragment.lastMovieFragment(in: zero[...], start: 0, fileSize: UInt64(zero.count)) == 0..<16)
        for size in 0..<64 {
            let random = (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 131 &+ 7) } + Array("moof".utf8)
            _ = LastFragment.lastMovieFragment(in: random[...], start: 0, fileSize: UInt64(random.count))
        }
    }
}
