import Testing
@testable import MP4Core
import MP4TestSupport

@Suite struct LayoutTests {
    func open(_ name: String) async throws -> MP4File {
        let bytes = try #require(FileSystem.read(Fixtures.sample(name)), "missing \(name)")
        return try await MP4File.open(MemorySource(bytes, name: name))
    }

    @Test(arguments: [
        ("faststart.mp4", MoviePlacement.beforeMediaData, MP4File.Kind.progressive),
        ("moov-at-end.mp4", .afterMediaData, .progressive),
        ("fragmented.mp4", .beforeMediaData, .fragmented),
        ("fragmented-sidx.mp4", .beforeMediaData, .fragmented),
        ("quicktime.mov", .afterMediaData, .progressive),
        ("two-mdat-free.mp4", .afterMediaData, .progressive),
        ("largesize-mdat.mp4", .afterMediaData, .progressive),
        ("size-zero-mdat.mp4", .beforeMediaData, .progressive),
        ("uuid-box.mp4", .beforeMediaData, .progressive),
    ])
    func verdicts(name: String, placement: MoviePlacement, kind: MP4File.Kind) async throws {
        let file = try await open(name)
        #expect(file.layout.moviePlacement == placement)
        #expect(file.kind == kind)
        #expect(file.layout.isFastStart == (placement == .beforeMediaData))
        #expect(!file.layout.isTruncated)
        let moov = try #require(file.layout.movieBox)
        #expect(file.layout.startupByteCount == moov.offset + moov.size)
        #expect(!file.findings.contains { $0.severity == .error }, "\(file.findings)")
    }

    @Test func specialHeadersAreReported() async throws {
        let large = try await open("largesize-mdat.mp4")
        #expect(large.layout.firstMediaDataBox?.header.usesLargeSize == true)
        let zero = try await open("size-zero-mdat.mp4")
        #expect(zero.layout.boxes.last?.header.extendsToEnd == true)
        #expect(zero.findings.contains { $0.id == "size-zero-box" })
        let uuid = try await open("uuid-box.mp4")
        #expect(uuid.layout.boxes[1].header.userTypeString == "be7acfcb-97a9-42e8-9c71-999491e3afac")
        let qt = try await open("quicktime.mov")
        #expect(qt.layout.boxes.map(\.type).contains(.wide))
        #expect(qt.fileType?.isQuickTime == true)
        let two = try await open("two-mdat-free.mp4")
        #expect(two.layout.mediaDataBoxes.count == 2)
        #expect(two.findings.contains { $0.id == "multiple-mdat" } && two.findings.contains { $0.id == "not-faststart" })
    }

    @Test func aSmallTrailingMdatDoesNotMakeAFileFaststart() async throws {
        let ftyp = BoxBuilder.ftyp
        let bytes = ftyp + BoxBuilder.box("mdat", [1, 2, 3]) + BoxBuilder.box("moov", BoxBuilder.box("free")) + BoxBuilder.box("mdat", [4])
        let layout = try await TopLevelScanner.scan(MemorySource(bytes))
        #expect(layout.moviePlacement == .afterMediaData)
    }

    @Test func truncatedMdatIsReportedNotThrown() async throws {
        let bytes = BoxBuilder.ftyp + BoxBuilder.u32(1000) + Array("mdat".utf8) + [1, 2, 3]
        let layout = try await TopLevelScanner.scan(MemorySource(bytes))
        #expect(layout.boxes.last?.isTruncated == true && layout.boxes.last?.availableSize == 11)
        #expect(layout.findings.contains { $0.id == "mdat-past-eof" })
    }

    @Test func mediaSegmentWithoutMoovIsNotAnError() async throws {
        let bytes = BoxBuilder.box("styp", Array("msdh".utf8) + BoxBuilder.u32(0)) + BoxBuilder.box("moof", BoxBuilder.fullBox("mfhd", BoxBuilder.u32(7))) + BoxBuilder.box("mdat", [0])
        let file = try await MP4File.open(MemorySource(bytes))
        #expect(file.kind == .mediaSegment && file.layout.moviePlacement == .noMovie && file.isFragmented)
    }

    @Test func notAnMP4IsATypedError() async {
        do {
            _ = try await MP4File.open(MemorySource(Array("hello, this is text and not a movie".utf8)))
            Issue.record("accepted text")
        } catch let e as MP4Error {
            #expect(e.kind == .notMP4)
        } catch { Issue.record("wrong error \(error)") }
    }

    @Test func moovAboveTheCapIsRefused() async throws {
        let bytes = try #require(FileSystem.read(Fixtures.sample("faststart.mp4")))
        do {
            _ = try await MP4File.open(MemorySource(bytes), options: .init(limits: ParseLimits(maxMovieBoxSize: 1000)))
            Issue.record("cap ignored")
        } catch let e as MP4Error {
            #expect(e.kind == .limitExceeded && e.offset == 32)
        }
    }
}
