import Testing
@testable import MP4Core
import MP4TestSupport

/// A top-level `sidx` is read once per open (issue 34: the scan read it, then the duration
/// step and the fragment locator each read and parsed it again): the layout keeps what was
/// read (``FileLayout/segmentIndexes``) and later users take it from there.
@Suite struct SegmentIndexReadOnceTests {
    /// How many bytes of `sidx` past its first 32 (the scan's header peek, ``BoxHeader/maximumSize``) the reads
    /// of `source` after the `start`th took: 32 for the 64-byte index of fragmented-sidx.mp4
    /// (mvhd duration 0) read once.
    static func sidxBytesRead(_ source: CountingSource<SmallReads>, _ sidx: TopLevelBox, after start: Int = 0) async -> UInt64 {
        let body = (sidx.offset + UInt64(BoxHeader.maximumSize))..<sidx.availableEnd
        return await source.log.ranges.dropFirst(start).reduce(0) { $0 + UInt64($1.clamped(to: body).count) }
    }

    @Test(arguments: [false, true]) func theIndexIsReadOnceAndTheLocatorReusesIt(followsIndex: Bool) async throws {
        let bytes = try #require(FileSystem.read(Fixtures.sample("fragmented-sidx.mp4")))
        // A small read size keeps the sidx out of the scan's first window, so that each read
        // of it shows.
        let source = CountingSource(SmallReads(base: MemorySource(bytes)))
        var options = MP4File.Options()
        options.followsSegmentIndex = followsIndex
        options.facts = .indexDuration
        let file = try await MP4File.open(source, options: options)
        let sidx = try #require(file.layout.boxes.first { $0.type == .sidx })
        #expect(file.layout.segmentIndexes[sidx.offset] != nil, "the open kept the index it read")
        #expect(await Self.sidxBytesRead(source, sidx) == 32, "the open read the index once")
        #expect(file.movie?.indexedDurationSeconds != nil)
        let before = await source.log.ranges.count
        let locator = try #require(try await FragmentLocator.load(file, from: source, trackID: 1))
        #expect(locator.origin == .segmentIndex && !locator.entries.isEmpty)
        #expect(await Self.sidxBytesRead(source, sidx, after: before) == 0, "the locator took the index from the layout")
    }
}

/// A memory source whose reads ahead are 16 bytes: a box header's, not the index's 64.
struct SmallReads: ByteSource {
    let base: MemorySource
    var name: String { base.name }
    var preferredReadSize: Int { 16 }
    func length() async throws -> UInt64 { try await base.length() }
    func read(_ range: Range<UInt64>) async throws -> [UInt8] { try await base.read(range) }
}

/// The moofs an open parsed whole (a box listing, the inspector: `loadsAllBoxes`) are not read
/// again by the fragment index (the inspector read each moof three times: the tree, the
/// fragment facts, its seek index).
@Suite struct ParsedFragmentsReadOnceTests {
    @Test func theIndexTakesTheParsedMoofs() async throws {
        let bytes = try #require(FileSystem.read(Fixtures.sample("fragmented-short.mp4")))
        let source = CountingSource(MemorySource(bytes))
        let file = try await MP4File.open(source, options: MP4File.Options(loadsAllBoxes: true))
        #expect(file.layout.boxes.filter { $0.type == .moof }.count > 5)
        // The fragment facts of the open cost nothing more than the listing itself.
        let listing = CountingSource(MemorySource(bytes))
        _ = try await MP4File.open(listing, options: MP4File.Options(loadsAllBoxes: true, facts: .structure))
        let listingReads = await listing.log.ranges.count
        #expect(await source.log.ranges.count == listingReads)
        let before = await source.log.ranges.count
        let planner = try await SeekPlanner.index(file, from: source)
        #expect(planner.tracks.allSatisfy { $0.samples.sampleCount > 0 })
        let after = await source.log.ranges
        #expect(after.count == before, "the index read again: \(after.dropFirst(before))")
    }
}
