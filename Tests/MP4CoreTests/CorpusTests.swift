import Testing
@testable import MP4Core
import MP4TestSupport

/// Checks the parser against `../shared/corpus/manifest.tsv`, an independent description of
/// 143 real and malformed files. Skips when `../shared` is absent.
@Suite struct CorpusTests {
    struct Entry: Sendable, CustomStringConvertible {
        var category: String, file: String, kind: String, layout: String, placement: String, fragmented: String
        var description: String { file }
    }

    static let entries: [Entry] = {
        guard let corpus = Fixtures.sharedCorpus, let bytes = FileSystem.read(corpus + "/manifest.tsv") else { return [] }
        let lines = String(decoding: bytes, as: UTF8.self).split(whereSeparator: \.isNewline).map { $0.split(separator: "\t", omittingEmptySubsequences: false).map(String.init) }
        guard let header = lines.first else { return [] }
        func column(_ name: String) -> Int { header.firstIndex(of: name) ?? 0 }
        let (c, f, k, t, m, fr) = (column("category"), column("file"), column("kind"), column("top_level_boxes"), column("moov_before_mdat"), column("fragmented"))
        return lines.dropFirst().filter { $0.count == header.count }.map { Entry(category: $0[c], file: $0[f], kind: $0[k], layout: $0[t], placement: $0[m], fragmented: $0[fr]) }
    }()

    static func placementText(_ p: MoviePlacement) -> String {
        switch p {
        case .beforeMediaData: return "yes"
        case .afterMediaData: return "no"
        case .noMediaData: return "no-mdat"
        case .noMovie: return "no-moov"
        }
    }

    /// Compares our layout with the manifest's, which abbreviates long lists as
    /// `a;b;...;...(+N more)`: the listed boxes must match and the total count must agree.
    static func layoutMatches(_ layout: FileLayout, _ expected: String) -> Bool {
        let ours = layout.boxes.map { "\($0.type)@\($0.offset)+\($0.availableSize)" }
        var theirs = expected.split(separator: ";").map(String.init)
        guard let last = theirs.last, last.hasPrefix("...(+"), last.hasSuffix(" more)") else { return ours == theirs }
        theirs.removeLast()
        guard let more = Int(last.dropFirst(5).dropLast(6)) else { return false }
        return Array(ours.prefix(theirs.count)) == theirs && ours.count == theirs.count + more
    }

    static func layoutText(_ layout: FileLayout) -> String {
        layout.boxes.map { "\($0.type)@\($0.offset)+\($0.availableSize)" }.joined(separator: ";")
    }

    @Test(.enabled(if: Fixtures.hasCorpus, Fixtures.noCorpus)) func corpusIsComplete() {
        #expect(Self.entries.count == 143)
    }

    @Test(.enabled(if: Fixtures.hasCorpus, Fixtures.noCorpus), arguments: entries.filter { $0.category == "valid" })
    func validFileMatchesManifest(entry: Entry) async throws {
        let corpus = try #require(Fixtures.sharedCorpus)
        let bytes = try #require(FileSystem.read(corpus + "/" + entry.file))
        let file = try await MP4File.open(MemorySource(bytes, name: entry.file))
        #expect(Self.layoutMatches(file.layout, entry.layout), "ours: \(Self.layoutText(file.layout))")
        #expect(Self.placementText(file.layout.moviePlacement) == entry.placement)
        #expect((file.isFragmented ? "1" : "0") == entry.fragmented)
        if entry.kind == "media-segment" {
            #expect(file.kind == .mediaSegment && file.movie == nil)
        } else {
            #expect(file.movie != nil, "no moov parsed")
        }
        #expect(file.layout.unparsedTailByteCount == 0)
    }

    @Test(.enabled(if: Fixtures.hasCorpus, Fixtures.noCorpus), arguments: entries.filter { $0.category == "malformed" })
    func malformedFileGivesAResultOrATypedError(entry: Entry) async throws {
        let corpus = try #require(Fixtures.sharedCorpus)
        let bytes = try #require(FileSystem.read(corpus + "/" + entry.file))
        let started = FileSystem.now()
        let layout = try await TopLevelScanner.scan(MemorySource(bytes))
        #expect(Self.layoutMatches(layout, entry.layout), "ours: \(Self.layoutText(layout))")
        #expect(Self.placementText(layout.moviePlacement) == entry.placement)
        do {
            let file = try await MP4File.open(MemorySource(bytes, name: entry.file))
            _ = file.movie?.tracks.map(\.codecStringSummary)
        } catch is MP4Error {
            // A typed error is an acceptable answer for a broken file.
        }
        #expect(FileSystem.now() - started < 5)
    }
}

extension Track {
    var codecStringSummary: String { sampleEntries.map(\.codecString).joined(separator: ",") }
}
