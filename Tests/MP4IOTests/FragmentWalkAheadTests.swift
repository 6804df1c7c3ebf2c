import Testing
@testable import MP4IO

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
}
