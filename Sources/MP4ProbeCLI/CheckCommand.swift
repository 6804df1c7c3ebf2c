import Foundation
import MP4Core
import MP4IO

/// `mp4probe check [OPTIONS] PATH|DIR|- ...`: the CI gate for uploaded videos (docs/check.md).
enum CheckCommand: Command {
    static let spec = CommandSpec(
        name: "check",
        summary: "CI gate: check files or directories against a policy (faststart, integrity, keyframes...)",
        usage: ["mp4probe check [OPTIONS] PATH|DIR|URL|- ..."],
        description: """
        Checks every file given (directories recursively; - reads paths or URLs from standard
        input, one per line), reading only box headers and moov, against a policy. Exit 0 when
        every file passes, 1 when any fails a rule, 2 for usage errors (no file to check
        included), 4 when a file cannot be read.
        """,
        options: [
            .value("policy", "FILE", "JSON policy (keys: requireFaststart, maxStartupBytes,\nmaxKeyframeInterval, maxInterleave, allowCodecs, allowBrands,\nallowFragmented, maxDuration, minResolution, maxResolution,\nconformance, and the ingest keys of docs/check.md: maxBitDepth,\nallowChroma, allowInterlaced, allowRotation, maxFrameRate,\nrequireConstantFrameRate, maxConsecutiveBFrames, requireClosedGOP,\neditLists, maxVideoBitRate, maxGOPBitRate, maxFileSize,\nallowAudioChannels, allowAudioSampleRates, allowHDR, fragmentedCodecs,\nmaxLevel); unknown keys are errors; flags override it"),
            .value("preset", "NAME", "a platform's ingest rules: youtube, mux, cloudflare, apple-hls\n(docs/check.md lists each rule and its source); --policy and\nflags apply on top"),
            .flag("conformance", "also fail every \"shall\" of ISO/IEC 14496-12 the boxes break\n(iso-* findings; QuickTime files by QuickTime's rules)"),
            .value("explain", "ID", "print what finding ID means: its rule, the spec's section and\nwhat to do, then exit"),
            .flag("allow-moov-at-end", "do not require faststart"),
            .value("max-startup-bytes", "SIZE", "bytes a progressive player may need before playback"),
            .value("max-keyframe-interval", "S", "longest gap between keyframes, seconds"),
            .value("max-interleave", "S", "how far one track may run ahead of another in file order"),
            .value("allow-codecs", "LIST", "e.g. avc1,hvc1,mp4a (formats or codec-string prefixes)"),
            .value("allow-brands", "LIST", "allowed major brands"),
            .flag("no-fragmented", "fail fragmented files"),
            .value("max-duration", "S", "longest duration, seconds"),
            .value("min-resolution", "WxH", "smallest video resolution"),
            .value("max-resolution", "WxH", "largest video resolution"),
            .value("include", "GLOB", "files to check in directories (repeatable; default: .mp4 .m4v .m4a\n.mov .3gp .3g2 .m4s .cmfv .cmfa .mp4v)"),
            .value("exclude", "GLOB", "files to skip in directories (repeatable)"),
            .value("from-file", "LIST", "also check the paths or URLs listed in LIST, one per line (- reads\nstandard input; blank lines and # comments skipped)"),
            .value("shard", "I/N", "check only shard I of N (1 <= I <= N), chosen by a hash of each name:\nN jobs with I = 1...N check every file exactly once"),
            .value("format", "FORMAT", "text (default), json, jsonl, junit or github"),
            .value("jobs", "N", "files checked at once (default: the number of cores)"),
            .flag("fix", "rewrite files that fail only because of their layout to faststart,\nin place (atomic), then check them again"),
            .flag("quiet", "no progress line (shown only on a terminal)"),
        ], groups: [CommandTable.source, CommandTable.limits], exitCodes: [.success, .checkFailed, .usage, .ioError])

    /// One checked input, with whether `--fix` rewrote it.
    struct Entry: Sendable {
        var check: FileCheck
        var fixed: Bool
    }

    static let defaultExtensions = ["mp4", "m4v", "m4a", "mov", "3gp", "3g2", "m4s", "cmfv", "cmfa", "mp4v"]

    static func run(_ arguments: [String], output: some TextOutput, errors: some TextOutput) async throws -> Int32 {
        let scanner = try ArgumentScanner(arguments, for: spec)
        if let id = scanner.value("explain") {
            output.write(try explanation(id))
            return ExitCode.success.rawValue
        }
        let sourceOptions = try MP4Probe.sourceOptions(scanner)
        let format = scanner.value("format") ?? "text"
        guard ["text", "json", "jsonl", "junit", "github"].contains(format) else {
            throw ArgumentScanner.UsageError(description: "--format must be text, json, jsonl, junit or github, not '\(format)'")
        }
        let policy = try makePolicy(scanner)
        let limits = try MP4Probe.parseLimits(scanner)
        guard !scanner.positionals.isEmpty || scanner.value("from-file") != nil else { throw ArgumentScanner.UsageError(description: "missing PATH (a file, a directory, or - to read paths from standard input), or --from-file LIST") }
        let inputs = try collectInputs(scanner)
        let jobs = max(1, try scanner.integer("jobs") ?? ProcessInfo.processInfo.activeProcessorCount)
        let showsProgress = !scanner.flag("quiet") && isatty(2) == 1 && inputs.count > 1 && format != "github"

        var entries: [Entry?] = Array(repeating: nil, count: inputs.count)
        var emitted = 0
        func emitReady() {
            while emitted < entries.count, let entry = entries[emitted] {
                if format == "jsonl" { output.write(CheckReport.json(entry).rendered(pretty: false) + "\n") }
                emitted += 1
            }
        }
        var done = 0
        let clock = ContinuousClock(), started = clock.now
        var drawnAt: ContinuousClock.Instant?
        let fix = scanner.flag("fix"), fixedLimits = limits
        // Bounded concurrency: at most `jobs` files open at a time; results kept in input order.
        await withTaskGroup(of: (Int, Entry).self) { group in
            var next = 0
            func start() {
                guard next < inputs.count else { return }
                let index = next, path = inputs[index]
                next += 1
                group.addTask { (index, await checkOne(path, policy: policy, limits: fixedLimits, fix: fix, source: sourceOptions)) }
            }
            for _ in 0..<min(jobs, inputs.count) { start() }
            // Each directory is listed once for the leftovers beside its films (a kill before a
            // rename leaves a temporary): 1,000 films in one directory, one listing.
            var listings: [String: [String]] = [:]
            while let (index, entry) = await group.next() {
                entries[index] = entry
                done += 1
                if !MP4Probe.isURL(inputs[index]) {
                    let directory = Platform.split(inputs[index]).directory
                    if listings[directory] == nil { listings[directory] = Platform.list(directory).filter { $0.hasPrefix(".") && $0.hasSuffix(".tmp") } }
                    MP4Probe.mentionLeftovers(of: inputs[index], names: listings[directory], errors: errors)
                }
                // Files, rate and time left, redrawn at most every 100 ms (a fast run checks
                // thousands of files a second).
                if showsProgress, drawnAt.map({ clock.now - $0 >= .milliseconds(100) }) ?? true {
                    drawnAt = clock.now
                    StandardStream.error.write(ProgressLine.countLine("checked", done: done, total: inputs.count, noun: "file", seconds: ProgressLine.seconds(clock.now - started)))
                }
                emitReady()
                start()
            }
        }
        if showsProgress { StandardStream.error.write("\r\u{1B}[K") }
        let results = entries.compactMap { $0 }
        switch format {
        case "json": output.write(CheckReport.document(results, policy: policy).rendered(pretty: true) + "\n")
        case "jsonl": break
        case "junit": output.write(CheckReport.junit(results))
        case "github": output.write(CheckReport.github(results))
        default: output.write(CheckReport.text(results))
        }
        if results.contains(where: { $0.check.status == .ioError }) { return ExitCode.ioError.rawValue }
        if results.contains(where: { $0.check.status == .fail }) { return ExitCode.checkFailed.rawValue }
        return ExitCode.success.rawValue
    }

    /// What `check --explain ID` prints: the finding's severity and category, and for a
    /// conformance finding its rule, section and remedy.
    static func explanation(_ id: String) throws -> String {
        guard let kind = Finding.Kind(id: id) else {
            let known = Finding.Kind.allCases.map(\.id).sorted()
            throw ArgumentScanner.UsageError(description: "no finding is called '\(id)'; the ids are \(known.joined(separator: ", "))")
        }
        var text = "\(kind.id): \(kind.defaultSeverity.rawValue), category \(kind.category.rawValue)\n"
        if let rule = Conformance.rule(kind) {
            text += "ISO/IEC 14496-12:2022 \(rule.section) (an error with --conformance; not checked otherwise)\n"
            text += "rule: \(rule.rule)\nwhat to do: \(rule.remedy)\n"
        } else {
            text += "see docs/check.md and docs/json-schema.md (Finding ids) for when it is raised\n"
        }
        return text
    }

    /// The policy: the file's (when given), then the flags on top.
    static func makePolicy(_ scanner: ArgumentScanner) throws -> CheckPolicy {
        var policy = CheckPolicy()
        if let name = scanner.value("preset") {
            guard let preset = CheckPreset(rawValue: name) else {
                throw ArgumentScanner.UsageError(description: "--preset must be one of \(CheckPreset.allCases.map(\.rawValue).joined(separator: ", ")), not '\(name)'")
            }
            policy = preset.policy
        }
        if let path = scanner.value("policy") {
            // At most 1 MiB + 1 byte is read: the parser refuses anything larger.
            guard let handle = FileHandle(forReadingAtPath: path), let data = try? handle.read(upToCount: (1 << 20) + 1) ?? Data() else {
                throw ArgumentScanner.UsageError(description: "cannot read the policy file \(path)")
            }
            try? handle.close()
            do {
                policy = try CheckPolicy.parse(document: Array(data), base: policy)
            } catch let error as CheckPolicy.DocumentError {
                throw ArgumentScanner.UsageError(description: "policy \(path), line \(error.line), column \(error.column): \(error.message)")
            }
        }
        if scanner.flag("allow-moov-at-end") { policy.requireFaststart = false }
        if scanner.flag("no-fragmented") { policy.allowFragmented = false }
        if scanner.flag("conformance") { policy.conformance = true }
        if let v = try scanner.size("max-startup-bytes") { policy.maxStartupBytes = v }
        if let v = try scanner.seconds("max-keyframe-interval") { policy.maxKeyframeInterval = v }
        if let v = try scanner.seconds("max-interleave") { policy.maxInterleave = v }
        if let v = try scanner.seconds("max-duration") { policy.maxDuration = v }
        if let v = scanner.list("allow-codecs") { policy.allowCodecs = v }
        if let v = scanner.list("allow-brands") { policy.allowBrands = v }
        for name in ["min-resolution", "max-resolution"] {
            guard let text = scanner.value(name) else { continue }
            guard CheckPolicy.parseResolution(text) != nil else { throw ArgumentScanner.UsageError(description: "--\(name) expects WIDTHxHEIGHT such as 1280x720, not '\(text)'") }
            if name == "min-resolution" { policy.minResolution = text } else { policy.maxResolution = text }
        }
        return policy
    }

    /// Files named on the command line, found in directories (recursively, sorted, filtered by
    /// `--include`/`--exclude` globs), or read from standard input with `-`.
    static func collectInputs(_ scanner: ArgumentScanner) throws -> [String] {
        let includes = scanner.list("include"), excludes = scanner.list("exclude") ?? []
        func matches(_ path: String) -> Bool {
            let name = String(path.split(separator: "/").last ?? "")
            if excludes.contains(where: { fnmatch($0, path, 0) == 0 || fnmatch($0, name, 0) == 0 }) { return false }
            if let includes { return includes.contains { fnmatch($0, path, 0) == 0 || fnmatch($0, name, 0) == 0 } }
            return defaultExtensions.contains(String(name.split(separator: ".").last ?? "").lowercased())
        }
        var inputs: [String] = []
        var named = scanner.positionals
        if let list = scanner.value("from-file") {
            if list == "-" {
                named.append("-")
            } else {
                // Bounded like any input: 256 MiB holds millions of URLs.
                guard let handle = FileHandle(forReadingAtPath: list), let data = try? handle.read(upToCount: (256 << 20) + 1) ?? Data() else {
                    throw ArgumentScanner.UsageError(description: "cannot read the list --from-file \(list)")
                }
                try? handle.close()
                guard data.count <= 256 << 20 else { throw ArgumentScanner.UsageError(description: "the list --from-file \(list) is larger than 256 MiB; split it (or use --shard)") }
                named += listLines(String(decoding: data, as: UTF8.self))
            }
        }
        for argument in named {
            if argument == "-" {
                while let line = readLine() { inputs += listLines(line) }
                continue
            }
            var isDirectory: ObjCBool = false
            if !MP4Probe.isURL(argument), FileManager.default.fileExists(atPath: argument, isDirectory: &isDirectory), isDirectory.boolValue {
                let base = argument.hasSuffix("/") ? String(argument.dropLast()) : argument
                let found = (FileManager.default.enumerator(atPath: base)?.allObjects as? [String] ?? []).sorted()
                for relative in found {
                    let path = base + "/" + relative
                    var sub: ObjCBool = false
                    if FileManager.default.fileExists(atPath: path, isDirectory: &sub), !sub.boolValue, matches(path) { inputs.append(path) }
                }
            } else {
                inputs.append(argument)  // named explicitly: checked whatever its name
            }
        }
        // Nothing to check is a misconfiguration (an empty directory, a CI glob that matched
        // nothing, empty stdin), never a pass.
        if inputs.isEmpty {
            throw ArgumentScanner.UsageError(description: "no files to check in \(named.joined(separator: " ")) (directories are searched for \(defaultExtensions.sorted().joined(separator: ", ")) unless --include says otherwise)")
        }
        if let shard = scanner.value("shard") {
            let parts = shard.split(separator: "/")
            guard parts.count == 2, let index = Int(parts[0]), let count = Int(parts[1]), count >= 1, (1...count).contains(index) else {
                throw ArgumentScanner.UsageError(description: "--shard expects I/N with 1 <= I <= N (e.g. 2/8), not '\(shard)'")
            }
            // By a hash of the name as given: a file's shard does not depend on the other files,
            // their order or the machine, so N shards check every file exactly once.
            inputs = inputs.filter { Int(FNV1a.hash($0.utf8) % UInt64(count)) == index - 1 }
        }
        return inputs
    }

    /// Paths or URLs of a list: one per line; blank lines and lines starting with # skipped.
    static func listLines(_ text: String) -> [String] {
        text.split(whereSeparator: \.isNewline).map { String($0).trimmingSpaces() }.filter { !$0.isEmpty && !$0.hasPrefix("#") }
    }

    /// Checks one path (or URL), fixing the layout in place with `--fix` when that is all that fails.
    static func checkOne(_ path: String, policy: CheckPolicy, limits: ParseLimits, fix: Bool, source: MP4Probe.SourceOptions) async -> Entry {
        let check = await checkPath(path, policy: policy, limits: limits, source: source)
        guard fix, check.failsOnlyOnLayout, !path.contains("://") else { return Entry(check: check, fixed: false) }
        do {
            _ = try await FaststartRewriter.rewrite(input: path, output: path, options: .init(inPlace: true, verifies: true, limits: limits))
        } catch let error as MP4Error {
            var failed = check
            failed.findings.append(Finding(.fixFailed, message: "--fix could not rewrite the file: \(error.message)"))
            return Entry(check: failed, fixed: false)
        } catch {
            return Entry(check: check, fixed: false)
        }
        return Entry(check: await checkPath(path, policy: policy, limits: limits, source: source), fixed: true)
    }

    static func checkPath(_ path: String, policy: CheckPolicy, limits: ParseLimits, source options: MP4Probe.SourceOptions) async -> FileCheck {
        do {
            let source = try await MP4Probe.openCachedSource(path, options)
            return await FileCheck.check(source, policy: policy, limits: limits)
        } catch let error as MP4Error {
            return FileCheck(name: path, status: .ioError, findings: [Finding(.ioError, message: error.message)], metrics: FileCheck.Metrics())
        } catch {
            return FileCheck(name: path, status: .ioError, findings: [Finding(.ioError, message: "\(error)")], metrics: FileCheck.Metrics())
        }
    }
}
