import Testing
import MP4Core

/// Locates test inputs: the project's `SampleMedia/` and, when present, `../shared/corpus`.
public enum Fixtures {
    /// The package root, derived from this file's location.
    public static let packageRoot: String = {
        var parts = #filePath.split(separator: "/", omittingEmptySubsequences: false)
        parts.removeLast(3)  // Tests/MP4TestSupport/Fixtures.swift
        return parts.joined(separator: "/")
    }()

    /// `SampleMedia/` in the package.
    public static let sampleMedia = packageRoot + "/SampleMedia"

    /// The path of a file in `SampleMedia/`.
    public static func sample(_ name: String) -> String { sampleMedia + "/" + name }

    /// `../shared/corpus` beside the package root, when it exists.
    public static let sharedCorpus: String? = {
        let path = packageRoot + "/../shared/corpus"
        return FileSystem.isDirectory(path) ? path : nil
    }()

    /// The valid sample files (not the malformed set), sorted.
    public static var sampleFiles: [String] {
        FileSystem.list(sampleMedia).filter { $0.hasSuffix(".mp4") || $0.hasSuffix(".m4a") || $0.hasSuffix(".mov") }.sorted()
    }

    /// The malformed sample files, sorted.
    public static var malformedSampleFiles: [String] {
        FileSystem.list(sampleMedia + "/malformed").sorted()
    }

    /// Why corpus tests are skipped when ../shared is not beside the package (the reason shown
    /// by `.enabled(if: Fixtures.hasCorpus, Fixtures.noCorpus)`).
    public static var hasCorpus: Bool { sharedCorpus != nil }
    public static let noCorpus: Comment = "../shared/corpus is not beside the package: the corpus tests are skipped"
}
