import Testing
@testable import MP4Core
import MP4TestSupport

/// Proves that opening a file reads box headers and moov only, never media data.
@Suite struct ReadCostTests {
    /// A 40 MB moov-at-end file: the real moov of `moov-at-end.mp4` behind a 40 MB mdat of
    /// zeros (synthetic: nothing is written to disk).
    @Test func moovAtEndReadsOnlyHeadersAndMoov() async throws {
        let sample = try #require(FileSystem.read(Fixtures.sample("moov-at-end.mp4")))
        let layout = try await TopLevelScanner.scan(MemorySource(sample))
        let moov = try #require(layout.movieBox)
        let moovBytes = Array(sample[Int(moov.offset)..<Int(moov.availableEnd)])
        let mdatPayload: UInt64 = 40 << 20
        let source = CountingSource(SyntheticSource([
            .bytes(BoxBuilder.ftyp),
            .bytes(BoxBuilder.u32(UInt32(mdatPayload + 8)) + Array("mdat".utf8)),
            .zeros(mdatPayload),
            .bytes(moovBytes),
        ]))
        let file = try await MP4File.open(source)
        #expect(file.layout.moviePlacement == .afterMediaData)
        #expect(file.movie?.tracks.count == 2)
        let read = await source.log.byteCount
        let reads = await source.log.ranges
        #expect(read <= UInt64(moovBytes.count) + 8192, "read \(read) bytes for a \(moovBytes.count)-byte moov: \(reads)")
        let mdatRange = UInt64(BoxBuilder.ftyp.count + 8)..<(UInt64(BoxBuilder.ftyp.count + 8) + mdatPayload)
        let mediaBytesRead = reads.reduce(UInt64(0)) { total, r in
            total + UInt64(max(0, Int64(min(r.upperBound, mdatRange.upperBound)) - Int64(max(r.lowerBound, mdatRange.lowerBound))))
        }
        #expect(mediaBytesRead <= 4096, "read \(mediaBytesRead) bytes of media data")
        #expect(reads.count == 2, "head window, then one read from the end of mdat")
        #expect(file.statistics.byteCount == read && file.statistics.readCount == reads.count)
    }

    /// ftyp, this 2.9 KB moov, the free box and the mdat header all lie in the first 4 KiB:
    /// one read, and mdat (running to the end of the file) is skipped.
    @Test func faststartFileIsReadInOneRead() async throws {
        let sample = try #require(FileSystem.read(Fixtures.sample("faststart.mp4")))
        let source = CountingSource(MemorySource(sample))
        let file = try await MP4File.open(source)
        let reads = await source.log.ranges
        #expect(reads == [0..<4096], "\(reads)")
        #expect(file.movie?.tracks.count == 2)
    }
}
