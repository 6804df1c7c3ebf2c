import MP4Core
import MP4Report

/// The output formats of `mp4probe check`: text, JSON (one document or one line per file),
/// JUnit XML and GitHub Actions annotations.
enum CheckReport {
    typealias Entry = CheckCommand.Entry

    static func summary(_ entries: [Entry]) -> (passed: Int, failed: Int, unreadable: Int, fixed: Int) {
        (entries.filter { $0.check.status == .pass }.count, entries.filter { $0.check.status == .fail }.count,
         entries.filter { $0.check.status == .ioError }.count, entries.filter(\.fixed).count)
    }

    // MARK: text

    static func text(_ entries: [Entry]) -> String {
        var text = ""
        for entry in entries {
            let c = entry.check
            let label = c.status == .pass ? "PASS" : (c.status == .fail ? "FAIL" : "ERROR")
            var facts: [String] = []
            if let faststart = c.metrics.faststart { facts.append(faststart ? "faststart" : "moov at end") }
            if let kind = c.metrics.kind, kind != "progressive" { facts.append(kind) }
            if let d = c.metrics.durationSeconds { facts.append("\(Format.fixed(d, 1)) s") }
            if !c.metrics.codecs.isEmpty { facts.append(c.metrics.codecs.joined(separator: "+")) }
            if let k = c.metrics.maxKeyframeInterval { facts.append("keyframes ≤ \(Format.fixed(k, 2)) s") }
            if let i = c.metrics.interleaveSeconds { facts.append("interleave \(Format.fixed(i, 2)) s") }
            if entry.fixed { facts.append("fixed: rewritten to faststart") }
            text += "\(label)  \(c.name)" + (facts.isEmpty ? "" : "  (\(facts.joined(separator: ", ")))") + "\n"
            for finding in c.findings where finding.severity == .error || c.status != .pass {
                guard finding.severity != .info else { continue }
                text += "      \(finding.severity.rawValue) \(finding.id): \(finding.message)\n"
            }
            // What to run: the core says what is wrong, the tool says which command fixes it.
            if c.status == .fail && c.failsOnlyOnLayout && !entry.fixed {
                text += "      fix: mp4probe faststart --in-place '\(c.name)' (or check --fix)\n"
            }
        }
        let s = summary(entries)
        text += "\(Format.count(entries.count, "file")): \(s.passed) passed, \(s.failed) failed" + (s.unreadable > 0 ? ", \(s.unreadable) unreadable" : "") + (s.fixed > 0 ? ", \(s.fixed) fixed" : "") + "\n"
        return text
    }

    // MARK: JSON

    static func json(_ entry: Entry) -> JSONValue {
        let c = entry.check, m = c.metrics
        func opt(_ v: Double?) -> JSONValue { v.map(JSONValue.double) ?? .null }
        func opt(_ v: UInt64?) -> JSONValue { v.map(JSONValue.uint) ?? .null }
        func opt(_ v: Int?) -> JSONValue { v.map { .int(Int64($0)) } ?? .null }
        func opt(_ v: String?) -> JSONValue { v.map(JSONValue.string) ?? .null }
        return .object([
            ("name", .string(c.name)),
            ("status", .string(c.status.rawValue)),
            ("fixed", .bool(entry.fixed)),
            ("metrics", .object([
                ("fileSize", opt(m.fileSize)), ("kind", opt(m.kind)), ("majorBrand", opt(m.majorBrand)),
                ("faststart", m.faststart.map(JSONValue.bool) ?? .null), ("startupBytes", opt(m.startupBytes)),
                ("durationSeconds", opt(m.durationSeconds)), ("codecs", .array(m.codecs.map(JSONValue.string))),
                ("width", opt(m.width)), ("height", opt(m.height)),
                ("maxKeyframeInterval", opt(m.maxKeyframeInterval)), ("interleaveSeconds", opt(m.interleaveSeconds)),
                ("interleaveBytes", opt(m.interleaveBytes)), ("samplesChecked", .int(Int64(m.samplesChecked))),
            ])),
            ("findings", .array(c.findings.map(InfoReport.findingJSON))),
        ])
    }

    static func document(_ entries: [Entry], policy: CheckPolicy) -> JSONValue {
        let s = summary(entries)
        func opt(_ v: Double?) -> JSONValue { v.map(JSONValue.double) ?? .null }
        func list(_ v: [String]?) -> JSONValue { v.map { .array($0.map(JSONValue.string)) } ?? .null }
        func int(_ v: Int?) -> JSONValue { v.map { .int(Int64($0)) } ?? .null }
        func ints(_ v: [Int]?) -> JSONValue { v.map { .array($0.map { .int(Int64($0)) }) } ?? .null }
        var policyMembers: [(String, JSONValue)] = [
            ("requireFaststart", .bool(policy.requireFaststart)), ("maxStartupBytes", policy.maxStartupBytes.map(JSONValue.uint) ?? .null),
            ("maxKeyframeInterval", opt(policy.maxKeyframeInterval)), ("maxInterleave", opt(policy.maxInterleave)),
            ("allowCodecs", list(policy.allowCodecs)), ("allowBrands", list(policy.allowBrands)),
        ]
        policyMembers += [
            ("allowFragmented", .bool(policy.allowFragmented)), ("maxDuration", opt(policy.maxDuration)),
            ("minResolution", policy.minResolution.map(JSONValue.string) ?? .null), ("maxResolution", policy.maxResolution.map(JSONValue.string) ?? .null),
            ("conformance", .bool(policy.conformance)),
        ]
        policyMembers += [
            ("maxBitDepth", policy.maxBitDepthByFamily.map { depths in .object(depths.sorted { $0.key < $1.key }.map { ($0.key, .int(Int64($0.value))) }) } ?? int(policy.maxBitDepth)), ("allowChroma", list(policy.allowChroma)), ("allowInterlaced", .bool(policy.allowInterlaced)), ("allowRotation", .bool(policy.allowRotation)),
            ("maxFrameRate", opt(policy.maxFrameRate)), ("requireConstantFrameRate", .bool(policy.requireConstantFrameRate)),
            ("maxConsecutiveBFrames", int(policy.maxConsecutiveBFrames)), ("requireClosedGOP", .bool(policy.requireClosedGOP)),
        ]
        policyMembers += [
            ("editLists", policy.editLists.map(JSONValue.string) ?? .null), ("maxVideoBitRate", policy.maxVideoBitRate.map(JSONValue.uint) ?? .null),
            ("maxGOPBitRate", policy.maxGOPBitRate.map(JSONValue.uint) ?? .null), ("maxFileSize", policy.maxFileSize.map(JSONValue.uint) ?? .null),
        ]
        policyMembers += [
            ("allowAudioChannels", ints(policy.allowAudioChannels)), ("allowAudioSampleRates", ints(policy.allowAudioSampleRates)),
            ("allowHDR", list(policy.allowHDR)), ("fragmentedCodecs", list(policy.fragmentedCodecs)),
            ("maxLevel", policy.maxLevel.map { caps in .object(caps.sorted { $0.key < $1.key }.map { ($0.key, .double($0.value)) }) } ?? .null),
        ]
        return .object([
            ("schemaVersion", .int(1)),
            ("policy", .object(policyMembers)),
            ("files", .array(entries.map(json))),
            ("summary", .object([("files", .int(Int64(entries.count))), ("passed", .int(Int64(s.passed))), ("failed", .int(Int64(s.failed))), ("unreadable", .int(Int64(s.unreadable))), ("fixed", .int(Int64(s.fixed)))])),
        ])
    }

    // MARK: JUnit

    /// `text` escaped for XML content, or for an attribute value with `attribute` (where a
    /// literal line break or tab would be read back as a space: they become character
    /// references, so a file name with a newline survives).
    static func xml(_ text: String, attribute: Bool = false) -> String {
        var out = ""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\n" where attribute: out += "&#10;"
            case "\r" where attribute: out += "&#13;"
            case "\t" where attribute: out += "&#9;"
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&apos;"
            case "\n", "\t", "\r": out.unicodeScalars.append(scalar)
            default:
                // XML 1.0 forbids most control characters, even escaped.
                if scalar.value < 0x20 || (0xD800...0xDFFF).contains(scalar.value) || scalar.value == 0xFFFE || scalar.value == 0xFFFF { out += "?" } else { out.unicodeScalars.append(scalar) }
            }
        }
        return out
    }

    static func junit(_ entries: [Entry]) -> String {
        let s = summary(entries)
        var text = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
        text += "<testsuites name=\"mp4probe check\" tests=\"\(entries.count)\" failures=\"\(s.failed)\" errors=\"\(s.unreadable)\">\n"
        text += "  <testsuite name=\"mp4probe check\" tests=\"\(entries.count)\" failures=\"\(s.failed)\" errors=\"\(s.unreadable)\" skipped=\"0\">\n"
        for entry in entries {
            let c = entry.check
            text += "    <testcase classname=\"mp4probe.check\" name=\"\(xml(c.name, attribute: true))\">\n"
            let problems = c.findings.filter { $0.severity == .error }
            if c.status == .fail {
                // One <failure> per error finding, as CI dashboards list them (they were folded
                // into one, which showed the first).
                for problem in problems.isEmpty ? [Finding(id: "fail", severity: .error, message: "failed")] : problems {
                    text += "      <failure type=\"\(xml(problem.id, attribute: true))\" message=\"\(xml(problem.message, attribute: true))\">"
                    text += xml(problem.description)
                    text += "</failure>\n"
                }
            } else if c.status == .ioError {
                text += "      <error type=\"io-error\" message=\"\(xml(problems.first?.message ?? "unreadable", attribute: true))\"/>\n"
            }
            let warnings = c.findings.filter { $0.severity == .warning }
            if !warnings.isEmpty {
                text += "      <system-out>\(xml(warnings.map { "\($0.id): \($0.message)" }.joined(separator: "\n")))</system-out>\n"
            }
            text += "    </testcase>\n"
        }
        text += "  </testsuite>\n</testsuites>\n"
        return text
    }

    // MARK: GitHub annotations

    /// Escapes a workflow command's message (`%`, CR, LF) or, with `property`, also `:` and `,`.
    static func githubEscape(_ text: String, property: Bool = false) -> String {
        var out = text.replacingOccurrences(of: "%", with: "%25").replacingOccurrences(of: "\r", with: "%0D").replacingOccurrences(of: "\n", with: "%0A")
        if property { out = out.replacingOccurrences(of: ":", with: "%3A").replacingOccurrences(of: ",", with: "%2C") }
        return out
    }

    static func github(_ entries: [Entry]) -> String {
        var text = ""
        for entry in entries {
            for finding in entry.check.findings where finding.severity != .info {
                let level = finding.severity == .error ? "error" : "warning"
                text += "::\(level) file=\(githubEscape(entry.check.name, property: true)),title=\(githubEscape("mp4probe " + finding.id, property: true))::\(githubEscape(finding.message))\n"
            }
        }
        let s = summary(entries)
        text += "\(Format.count(entries.count, "file")): \(s.passed) passed, \(s.failed) failed" + (s.unreadable > 0 ? ", \(s.unreadable) unreadable" : "") + "\n"
        return text
    }
}
