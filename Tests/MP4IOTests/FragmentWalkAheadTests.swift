import Testing
import MP4Core
@testable import MP4IO
import MP4TestSupport

/// The walk ahead's rules, without I/O: where it starts, how far it goes, what stops it.
@Suite struct FragmentWalkAheadTests {
    /// A walk of a film whose fragments start at 100, 200, 300... (length 10,000).
    static func walk() -> FragmentWalkAhead { FragmentWalkAhead(first: 100, length: 10_000) }

    /// Learns every head the walk wants, each fragment 100 bytes long; returns the heads read.
    static func learnAll(_ walk: inout FragmentWalkAhead) -> [UInt64] {
        var read: [UInt64] = []
        while let start = walk.wanted, read.count < 1_000 {
            read.append(start)
            walk.learned(start, end: start + 100)
        }
        return read
    }

    @Test func nothingIsWalkedBeforeAPlayerReads() {
        var walk = Self.walk()
        #expect(walk.wanted == nil)
        #expect(Self.learnAll(&walk).isEmpty)
    }

    @Test func aReadBeforeTheFragmentsWalksFromTheFirstAtMostDepthAhead() {
        var walk = Self.walk()
        let wants0 = walk.playerRead(at: 0)
        #expect(wants0)
        #expect(walk.anchor == 100)
        let heads = Self.learnAll(&walk)
        #expect(heads == (0...FragmentWalkAhead.depth).map { 100 + UInt64($0) * 100 }, "the anchor's head and depth more")
    }

    @Test func aHeaderReadFurtherOnMovesTheWalkAlong() {
        var walk = Self.walk()
        _ = walk.playerRead(at: 0)
        _ = Self.learnAll(&walk)
        let wants500 = walk.playerRead(at: 500)
        #expect(wants500, "a learned fragment start")
        #expect(walk.anchor == 500)
        let heads = Self.learnAll(&walk)
        #expect(heads.count == 4, "\(heads): the walk stays depth fragments past the anchor")
        #expect(heads.first == 1_800)
    }

    @Test func aReadInsideAFragmentIsNotAHeaderRead() {
        var walk = Self.walk()
        _ = walk.playerRead(at: 0)
        _ = Self.learnAll(&walk)
        let wants550 = walk.playerRead(at: 550)
        #expect(!wants550, "media, not a header: nothing more to walk")
        #expect(walk.anchor == 100)
        let wants50 = walk.playerRead(at: 50)
        #expect(!wants50, "a read before the first fragment again: the anchor stays")
    }

    @Test func aPlayerAheadOfTheWalkMovesTheAnchorOnceItsHeadIsLearned() {
        var walk = Self.walk()
        _ = walk.playerRead(at: 100)
        walk.learned(100, end: 200)
        _ = walk.playerRead(at: 300)   // not learned yet
        #expect(walk.anchor == 100)
        walk.learned(200, end: 300)
        #expect(walk.anchor == 300)
    }

    @Test(arguments: [nil, 50, 100, 20_000] as [UInt64?])
    func aHeadWithoutAFragmentEndsTheWalk(end: UInt64?) {
        var walk = Self.walk()
        _ = walk.playerRead(at: 100)
        walk.learned(100, end: end)
        #expect(walk.ended)
        #expect(walk.wanted == nil)
        let wants100 = walk.playerRead(at: 100)
        #expect(!wants100)
    }

    @Test func theWalkStopsAtTheEndOfTheFile() {
        var walk = FragmentWalkAhead(first: 100, length: 450)
        _ = walk.playerRead(at: 0)
        #expect(Self.learnAll(&walk) == [100, 200, 300, 400])
        #expect(walk.ended, "a fragment said to end past the file ends the walk")
    }

    /// A fragment's head read as it arrives, every prefix of it: more is needed until the
    /// `moof` and the header after it are in, then the fragment's end; never a trap, whatever
    /// the bytes say.
    @Test func aHeadIsReadAsItArrives() {
        let leading = BoxBuilder.box("styp", Array("isom".utf8)) + BoxBuilder.box("moof", [UInt8](repeating: 7, count: 700))
        let mdatAt = UInt64(leading.count)
        let bytes = leading + BoxBuilder.box("mdat", [UInt8](repeating: 1, count: 20_000))
        let start: UInt64 = 1_000, headEnd = start + (16 << 10), length = start + UInt64(bytes.count) + 500
        let whole = Array(bytes.prefix(16 << 10))
        for count in 0...whole.count {
            let answer = FragmentWalkAhead.head(whole.prefix(count), at: start, headEnd: headEnd, length: length)
            if count < Int(mdatAt) + 8 {
                #expect(answer == .needsMore, "\(count) bytes")
            } else {
                #expect(answer == .fragment(end: start + UInt64(bytes.count), headerEnd: start + mdatAt + 16), "\(count) bytes")
            }
        }
        #expect(FragmentWalkAhead.head([UInt8](repeating: 0xFF, count: 64)[...], at: 0, headEnd: 64, length: 64) == .none)
        // A head that ends inside the `moof`, or inside a box before it, is read on to the
        // header after it; one whose `moof` ends past FragmentWalkAhead.maxHeadSpan ends the walk.
        let shortHead = start + 512
        #expect(FragmentWalkAhead.head(whole.prefix(512), at: start, headEnd: shortHead, length: length) == .longer(through: start + mdatAt + 16))
        let big = BoxBuilder.box("free", [UInt8](repeating: 0, count: 6000)) + leading
        #expect(FragmentWalkAhead.head(big.prefix(4096)[...], at: start, headEnd: start + 4096, length: length + 6008) == .longer(through: start + 6008 + 16))
        let huge = BoxBuilder.box("moof", [UInt8](repeating: 7, count: Int(FragmentWalkAhead.maxHeadSpan)))
        #expect(FragmentWalkAhead.head(huge.prefix(4096)[...], at: start, headEnd: start + 4096, length: start + (4 << 20)) == .none)
        #expect(FragmentWalkAhead.head([0, 0, 0, 4, 0x6D, 0x6F, 0x6F, 0x66][...], at: 0, headEnd: 8, length: 8) == .none, "a size below the header")
        var random = SeededRandom(seed: 43)
        for _ in 0..<2_000 {
            let noise = random.bytes(Int(random.next() % 64))
            _ = FragmentWalkAhead.head(noise[...], at: 10, headEnd: 10 + UInt64(random.next() % 100), length: 10 + UInt64(random.next() % 200))
        }
    }

    /// Heads are sized from the fragments learned: 16 KiB until one is, then twice the largest
    /// `moof` and header after it seen, in 4 KiB units (a 2 s fragment's `moof` of 1 KiB: 4 KiB
    /// heads, not 16), growing with a larger one and never below 4 KiB.
    @Test func headsAreSizedFromTheFragmentsLearned() {
        var walk = Self.walk()
        #expect(walk.nextHeadSize == 16 << 10)
        walk.learned(100, end: 200, headerEnd: 100 + 900)
        #expect(walk.nextHeadSize == 4 << 10)
        walk.learned(200, end: 300, headerEnd: 200 + 3_000)
        #expect(walk.nextHeadSize == 8 << 10)
        walk.learned(300, end: 400, headerEnd: 300 + 20_000)
        #expect(walk.nextHeadSize == 40 << 10)
        walk.learned(400, end: 500, headerEnd: 400 + 100)
        #expect(walk.nextHeadSize == 40 << 10, "the largest seen")
        walk.learned(500, end: 600, headerEnd: 500 + 5 << 20)
        #expect(walk.nextHeadSize == FragmentWalkAhead.maxHeadSpan)
    }

    /// A player's read fetches a head first at a fragment start the walk knows and past
    /// every start it knows (a player that reads the headers faster than the walk); a read
    /// before the fragments, inside a fragment learned, past the file or after the walk
    /// ended fetches the planner's first piece. Fails when a read past the starts known
    /// gets none (a loaded run of FragmentedStartTests fetched 4-6 of 30 heads in 64 KiB).
    @Test func aReadPastTheStartsKnownFetchesAHeadFirst() {
        var walk = Self.walk()
        _ = walk.playerRead(at: 0)
        walk.learned(100, end: 200, headerEnd: 100 + 900)
        walk.learned(200, end: 300, headerEnd: 200 + 900)
        #expect(walk.frontier == 300)
        #expect(walk.headSize(at: 200) == 4 << 10, "a known start")
        #expect(walk.headSize(at: 300) == 4 << 10, "the furthest start known")
        #expect(walk.headSize(at: 420) == 4 << 10, "past it: a player ahead of the walk")
        #expect(walk.headSize(at: 250) == nil, "media of a fragment learned")
        #expect(walk.headSize(at: 50) == nil, "before the fragments")
        #expect(walk.headSize(at: 10_000) == nil, "past the file")
        walk.learned(300, end: nil)
        #expect(walk.ended)
        #expect(walk.headSize(at: 420) == nil, "the fragments ended")
    }
}
