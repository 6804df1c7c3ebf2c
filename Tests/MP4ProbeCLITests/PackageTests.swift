import Foundation
import Testing
import MP4TestSupport

/// The package as an app on an Apple platform adds it: no API newer than the deployment
/// targets `Package.swift` declares. Linux checks no availability, so nothing else here would
/// notice; Apple's compiler refuses such a use (issue 31: `String(validating:as:)`, macOS 15 /
/// iOS 18, broke the build for a target of macOS 13 / iOS 16).
@Suite struct PackageTests {
    /// An API that exists only from a platform version on.
    struct NewerAPI: Sendable {
        var pattern: String
        var macOS: Int
        var iOS: Int
    }

    /// The APIs that bit us or nearly did, with the versions Apple's SDKs give them. A use
    /// counts as guarded when an `if #available(...)`, `guard #available(...)` or
    /// `@available(...)` naming at least these versions appears in the 40 lines before it.
    static let newerAPIs: [NewerAPI] = [
        NewerAPI(pattern: "String(validating:", macOS: 15, iOS: 18),
        NewerAPI(pattern: "Task(executorPreference:", macOS: 15, iOS: 18),
        NewerAPI(pattern: ": TaskExecutor", macOS: 15, iOS: 18),
        NewerAPI(pattern: "import Synchronization", macOS: 15, iOS: 18),
        NewerAPI(pattern: "Mutex<", macOS: 15, iOS: 18),
        NewerAPI(pattern: "Atomic<", macOS: 15, iOS: 18),
        NewerAPI(pattern: "UInt128", macOS: 15, iOS: 18),
        NewerAPI(pattern: "Int128", macOS: 15, iOS: 18),
        NewerAPI(pattern: "Task.immediate", macOS: 26, iOS: 26),
        NewerAPI(pattern: "InlineArray", macOS: 26, iOS: 26),
        NewerAPI(pattern: "withDiscardingTaskGroup", macOS: 14, iOS: 17),
        NewerAPI(pattern: "@Observable", macOS: 14, iOS: 17),
        // At the targets today: these fail only if the targets are lowered.
        NewerAPI(pattern: "ContinuousClock", macOS: 13, iOS: 16),
        NewerAPI(pattern: "Task.sleep(for:", macOS: 13, iOS: 16),
        NewerAPI(pattern: "URL(filePath:", macOS: 13, iOS: 16),
    ]

    /// The deployment targets in Package.swift: (macOS, iOS) major versions.
    static func deploymentTargets(_ manifest: String) -> (macOS: Int, iOS: Int)? {
        func version(_ platform: String) -> Int? {
            guard let range = manifest.range(of: ".\(platform)(.v") else { return nil }
            return Int(manifest[range.upperBound...].prefix { $0.isNumber })
        }
        guard let macOS = version("macOS"), let iOS = version("iOS") else { return nil }
        return (macOS, iOS)
    }

    /// The unguarded uses, in `text`, of APIs newer than `targets`, as "LINE: API".
    static func unguardedUses(in text: String, targets: (macOS: Int, iOS: Int)) -> [String] {
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        var found: [String] = []
        for (index, line) in lines.enumerated() {
            let code = line.trimmingCharacters(in: .whitespaces)
            if code.hasPrefix("//") { continue }
            for api in newerAPIs where code.contains(api.pattern) && (api.macOS > targets.macOS || api.iOS > targets.iOS) {
                let before = lines[max(0, index - 40)..<index]
                if !before.contains(where: { guards($0, api) }) { found.append("\(index + 1): \(api.pattern)") }
            }
        }
        return found
    }

    /// Whether `line` is an availability condition or attribute for at least `api`'s versions.
    static func guards(_ line: String, _ api: NewerAPI) -> Bool {
        guard line.contains("#available(") || line.contains("@available(") else { return false }
        func version(_ platform: String) -> Int? {
            guard let range = line.range(of: platform + " ") else { return nil }
            return Int(line[range.upperBound...].prefix { $0.isNumber })
        }
        return (version("macOS") ?? 0) >= api.macOS && (version("iOS") ?? 0) >= api.iOS
    }

    @Test func sourcesUseNoAPINewerThanTheDeploymentTargets() throws {
        let manifest = String(decoding: try #require(FileSystem.read(Fixtures.packageRoot + "/Package.swift")), as: UTF8.self)
        let targets = try #require(Self.deploymentTargets(manifest), "Package.swift declares no macOS and iOS deployment targets")
        let root = Fixtures.packageRoot + "/Sources"
        var found: [String] = [], files = 0
        for case let relative as String in FileManager.default.enumerator(atPath: root)?.allObjects ?? [] where relative.hasSuffix(".swift") {
            guard let bytes = FileSystem.read(root + "/" + relative) else { continue }
            files += 1
            found += Self.unguardedUses(in: String(decoding: bytes, as: UTF8.self), targets: targets).map { "Sources/\(relative):\($0)" }
        }
        #expect(files > 50, "only \(files) Swift files under Sources: the check would prove nothing")
        #expect(found.isEmpty, "APIs newer than macOS \(targets.macOS) / iOS \(targets.iOS), unguarded: \(found.joined(separator: ", "))")
    }

    /// The check finds what it is for, and accepts the guards it claims to.
    @Test func theCheckFindsAnUnguardedUse() {
        let targets = (macOS: 13, iOS: 16)
        #expect(Self.unguardedUses(in: "let s = String(validating: b, as: UTF8.self)", targets: targets) == ["1: String(validating:"])
        #expect(Self.unguardedUses(in: "if #available(macOS 15.0, iOS 18.0, *) {\n  let s = String(validating: b, as: UTF8.self)\n}", targets: targets).isEmpty)
        #expect(Self.unguardedUses(in: "if #available(macOS 14.0, iOS 17.0, *) {\n  let s = String(validating: b, as: UTF8.self)\n}", targets: targets).count == 1)
        #expect(Self.unguardedUses(in: "// String(validating: is macOS 15", targets: targets).isEmpty)
        #expect(Self.unguardedUses(in: "let s = String(validating: b, as: UTF8.self)", targets: (macOS: 15, iOS: 18)).isEmpty)
        #expect(Self.deploymentTargets("platforms: [.macOS(.v13), .iOS(.v16), .tvOS(.v16)]")! == (13, 16))
    }
}
