import Testing
import MP4Core
import MP4IO
import MP4TestSupport

@Suite struct FileSourceTests {
    @Test func readsRangesAndClampsAtTheEnd() async throws {
        let path = Fixtures.sample("faststart.mp4")
        let whole = try #require(FileSystem.read(path))
        let source = try FileSource(path: path)
        #expect(try await source.length() == UInt64(whole.count))
        #expect(try await source.read(4..<8) == Array("ftyp".utf8))
        let tail = try await source.read(UInt64(whole.count - 3)..<UInt64(whole.count + 100))
        #expect(tail == Array(whole.suffix(3)))
        #expect(try await source.read(UInt64(whole.count + 10)..<UInt64(whole.count + 20)).isEmpty)
    }

    @Test func missingFileIsAnIOError() {
        do {
            _ = try FileSource(path: Fixtures.sample("does-not-exist.mp4"))
            Issue.record("opened a missing file")
        } catch let e as MP4Error {
            #expect(e.kind == .io && e.message.contains("does-not-exist.mp4"))
        } catch { Issue.record("wrong error \(error)") }
    }

    @Test func directoryIsRefused() {
        #expect(throws: MP4Error.self) { try FileSource(path: Fixtures.sampleMedia) }
    }

    @Test(arguments: Fixtures.sampleFiles)
    func fileAndMemorySourcesAgree(name: String) async throws {
        let fromFile = try await MP4File.open(try FileSource(path: Fixtures.sample(name)))
        let fromMemory = try await MP4File.open(MemorySource(try #require(FileSystem.read(Fixtures.sample(name)))))
        #expect(fromFile.layout == fromMemory.layout)
        #expect(fromFile.movie == fromMemory.movie)
        #expect(fromFile.statistics == fromMemory.statistics)
    }

    @Test func concurrentReadsAreIndependent() async throws {
        let path = Fixtures.sample("moov-at-end.mp4")
        let whole = try #require(FileSystem.read(path))
        let source = try FileSource(path: path)
        try await withThrowingTaskGroup(of: Bool.self) { group in
            for i in 0..<32 {
                group.addTask {
                    let start = UInt64(i * 2000)
                    return try await source.read(start..<(start + 1500)) == Array(whole[Int(start)..<Int(start) + 1500])
                }
            }
            for try await ok in group { #expect(ok) }
        }
    }
}
