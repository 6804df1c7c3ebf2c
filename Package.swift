// swift-tools-version:6.0
import Foundation
import PackageDescription

let package = Package(
    name: "mp4probe",
    platforms: [.macOS(.v13), .iOS(.v16), .tvOS(.v16)],
    products: [
        .library(name: "MP4Core", targets: ["MP4Core"]),
        .library(name: "MP4IO", targets: ["MP4IO"]),
        .library(name: "MP4Report", targets: ["MP4Report"]),
        // The AVPlayer adapter (AVAssetResourceLoaderDelegate over MediaLoader): Apple only.
        .library(name: "MP4ProbeAVFoundation", targets: ["MP4ProbeAVFoundation"]),
        .executable(name: "mp4probe", targets: ["mp4probe"]),
    ],
    targets: [
        // Standard library only: boxes, sample tables, layout, seek and rewrite planning.
        .target(name: "MP4Core"),
        // Renderings for people, without I/O: number and size formats, the faststart verdict,
        // and the inspector page (one self-contained HTML file of a file's facts).
        .target(name: "MP4Report", dependencies: ["MP4Core"]),
        // Our own wrappers for system calls Glibc's overlay lacks (copy_file_range, SEEK_DATA,
        // record locks, sockets). Named for this package: target names are global in an app's
        // dependency graph, and apple/swift-system has a target named CSystem.
        .target(name: "MP4ProbeSystem"),
        // Byte sources (local files, HTTP, the sparse cache) and the file writers.
        .target(name: "MP4IO", dependencies: ["MP4Core", "MP4ProbeSystem"]),
        // CachingResourceLoader: AVFoundation's shell over MP4IO's ResourceLoading; its one
        // file is `#if canImport(AVFoundation)`, an empty module elsewhere.
        .target(name: "MP4ProbeAVFoundation", dependencies: ["MP4IO"]),
        // Commands, argument scanning, text and JSON rendering, exit codes.
        .target(name: "MP4ProbeCLI", dependencies: ["MP4Core", "MP4IO", "MP4Report"]),
        // libcurl loaded on first use (https), so that commands that never need it start
        // without loading it (Linux; see Sources/CurlLazy/curllazy.c).
        .target(name: "CurlLazy"),
        .executableTarget(name: "mp4probe", dependencies: ["MP4ProbeCLI", "CurlLazy"]),

        // Helpers shared by the test targets (they import Testing). A regular target, in no
        // product: Xcode's build system does not let a test target depend on another test
        // target, so `xcodebuild test` (the iOS simulator's tests) needs it so. `swift build`
        // compiles it too, which needs the Testing module: Xcode 16 and Swift 6 toolchains
        // have it.
        .target(name: "MP4TestSupport", dependencies: ["MP4Core", "MP4IO", "MP4ProbeSystem"], path: "Tests/MP4TestSupport"),
        // Benchmarks are executables, run by scripts in Tests/Benchmarks, never timed in tests.
        .executableTarget(name: "SeekBenchmark", dependencies: ["MP4Core", "MP4IO"], path: "Tests/Benchmarks/SeekBenchmark"),
        .testTarget(name: "MP4CoreTests", dependencies: ["MP4Core", "MP4TestSupport"]),
        .testTarget(name: "MP4IOTests", dependencies: ["MP4Core", "MP4IO", "MP4Report", "MP4TestSupport"]),
        .testTarget(name: "MP4ReportTests", dependencies: ["MP4Report", "MP4Core", "MP4TestSupport"]),
        .testTarget(name: "MP4ProbeCLITests", dependencies: ["MP4ProbeCLI", "MP4Core", "MP4IO", "MP4Report", "MP4TestSupport"], exclude: ["Goldens"]),
        // The Swift examples of docs/ and README.md, compiled (and the local ones run).
        .testTarget(name: "DocExamplesTests", dependencies: ["MP4Core", "MP4IO", "MP4Report"]),
    ],
    swiftLanguageModes: [.v6]
)

// The libFuzzer target exists only for Tests/Fuzz/run-fuzz.sh (MP4PROBE_FUZZ=1): it has no
// `main` of its own (libFuzzer provides it), so a plain `swift build` must not see it.
if ProcessInfo.processInfo.environment["MP4PROBE_FUZZ"] != nil {
    package.targets.append(.executableTarget(name: "MP4Fuzz", dependencies: ["MP4Core", "MP4IO", "MP4ProbeCLI", "MP4Report"], path: "Tests/Fuzz/MP4Fuzz"))
}
