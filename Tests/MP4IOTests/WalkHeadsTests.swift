import Testing
@testable import MP4IO

/// The heads the walk ahead holds for players (``WalkHeads``): what a player's request at a
/// head's start gets, when it waits, and what is kept.
@Suite struct WalkHeadsTests {
    @Test func aHeldHeadIsReadFromItsStartOrInside() async {
        let heads = WalkHeads()
        heads.expect(100)
        heads.landed(100, Array(0..<10))
        #expect(await heads.bytes(from: 100).map(Array.init) == Array(0..<10))
        #expect(await heads.bytes(from: 104).map(Array.init) == Array(4..<10))
        #expect(await heads.bytes(from: 110) == nil, "past the head")
        #expect(await heads.bytes(from: 99) == nil, "before it")
    }

    /// A player at the head the walk is reading waits for that read, then gets it; when the
    /// walk gives it up, the player goes on without it (to the cache).
    @Test func aPlayerAtTheHeadBeingReadWaitsForIt() async throws {
        let heads = WalkHeads()
        heads.expect(500)
        let waiting = Task { await heads.bytes(from: 500).map(Array.init) }
        try await Task.sleep(for: .milliseconds(50))
        heads.landed(500, [1, 2, 3])
        #expect(await waiting.value == [1, 2, 3])

        heads.expect(900)
        let givenUp = Task { await heads.bytes(from: 900) }
        try await Task.sleep(for: .milliseconds(50))
        heads.cancel(900)
        #expect(await givenUp.value == nil)
        #expect(await heads.bytes(from: 700) == nil, "no wait where the walk is not reading")
    }

    /// A player that leaves while it waits returns (nil) before the walk's read ends;
    /// cancelling another start than the one being read releases nobody.
    @Test(.timeLimit(.minutes(1))) func aWaitEndsWhenThePlayerLeaves() async throws {
        let heads = WalkHeads()
        heads.expect(10)
        let waiting = Task { await heads.bytes(from: 10) }
        try await Task.sleep(for: .milliseconds(50))
        heads.cancel(11)
        waiting.cancel()
        #expect(await waiting.value == nil)
        heads.landed(10, [7])
        #expect(await heads.bytes(from: 10).map(Array.init) == [7])
    }

    /// At most ``WalkHeads/maxHeads`` heads and ``WalkHeads/maxBytes`` bytes are held, the
    /// oldest go first.
    @Test func theOldestHeadsGoPastTheBounds() async {
        let heads = WalkHeads()
        for index in 0..<(WalkHeads.maxHeads + 5) { heads.landed(UInt64(index) * 1000, [UInt8(index % 256)]) }
        #expect(heads.heldStarts.count == WalkHeads.maxHeads)
        #expect(heads.heldStarts.first == 5000)
        heads.landed(1 << 40, [UInt8](repeating: 1, count: WalkHeads.maxBytes - 10))
        #expect(heads.heldStarts.count <= 11, "\(heads.heldStarts.count) heads held past the byte bound")
        #expect(heads.heldStarts.last == 1 << 40)
        heads.landed(1 << 41, [UInt8](repeating: 1, count: WalkHeads.maxBytes + 1))
        #expect(!heads.heldStarts.contains(1 << 41), "a head over the bound is not held")
    }
}
