/// Strict reading of a policy file (`mp4probe check --policy FILE`, docs/check.md).
///
/// A policy gates uploads, so a typo must not switch a rule off in silence: an unknown key, a
/// value of the wrong type or out of range is an error that names the key and its line and
/// column (and the key that was probably meant). The JSON reader is small and bounded (size,
/// nesting): a policy file is input too.
extension CheckPolicy {
    /// A policy file that cannot be used: where and why.
    public struct DocumentError: Error, Sendable, Hashable, CustomStringConvertible {
        /// 1-based line and column of the offending value or key.
        public var line: Int
        public var column: Int
        public var message: String
        public var description: String { "line \(line), column \(column): \(message)" }
    }

    /// The keys a policy document may have, with what each holds.
    static let documentKeys: [(name: String, kind: String)] = [
        ("requireFaststart", "true or false"), ("maxStartupBytes", "a whole number of bytes"),
        ("maxKeyframeInterval", "seconds (a number, 0 or more)"), ("maxInterleave", "seconds (a number, 0 or more)"),
        ("allowCodecs", "a list of strings"), ("allowBrands", "a list of strings"),
        ("allowFragmented", "true or false"), ("maxDuration", "seconds (a number, 0 or more)"),
        ("minResolution", "\"WIDTHxHEIGHT\""), ("maxResolution", "\"WIDTHxHEIGHT\""),
        ("conformance", "true or false"),
        ("maxBitDepth", "a whole number (8, 10, 12), or one by codec family, {\"avc\": 8, \"hevc\": 10}"), ("allowChroma", "a list of \"4:2:0\", \"4:2:2\", \"4:4:4\", \"4:0:0\""),
        ("allowInterlaced", "true or false"), ("allowRotation", "true or false"), ("maxFrameRate", "frames per second (a number, 0 or more)"),
        ("requireConstantFrameRate", "true or false"), ("maxConsecutiveBFrames", "a whole number"),
        ("requireClosedGOP", "true or false"), ("editLists", "\"none\", \"offset\" or \"any\""),
        ("maxVideoBitRate", "bits per second (a whole number)"), ("maxGOPBitRate", "bits per second (a whole number)"),
        ("maxFileSize", "a whole number of bytes"), ("allowAudioChannels", "a list of whole numbers"),
        ("allowAudioSampleRates", "a list of whole numbers (Hz)"),
        ("allowHDR", "a list of \"HDR10\", \"Dolby Vision\", \"PQ\", \"HLG\""), ("fragmentedCodecs", "a list of strings"),
        ("maxLevel", "an object of levels by codec family, {\"avc\": 4.2, \"hevc\": 5.1, \"av1\": 5.1, \"vp9\": 5.1}"),
    ]

    /// Parses a policy document; absent keys (and `null` values) keep their defaults; `$schema`
    /// is accepted and ignored.
    /// - Throws: ``DocumentError`` for invalid JSON, a document that is not an object, an
    ///   unknown key, a duplicate key, or a value of the wrong type or out of range.
    public static func parse(document bytes: [UInt8], base: CheckPolicy = CheckPolicy()) throws -> CheckPolicy {
        guard bytes.count <= 1 << 20 else { throw DocumentError(line: 1, column: 1, message: "the policy file is larger than 1 MiB") }
        var reader = JSONReader(bytes: bytes)
        let root = try reader.document()
        guard case .object(let members) = root.value else {
            throw DocumentError(line: root.line, column: root.column, message: "a policy is a JSON object ({\"maxKeyframeInterval\": 2, ...})")
        }
        var policy = base
        var seen: Set<String> = []
        for (key, value) in members {
            func fail(_ message: String) -> DocumentError { DocumentError(line: value.line, column: value.column, message: "\"\(key.text)\": \(message)") }
            guard key.text != "$schema" else { continue }
            guard let entry = documentKeys.first(where: { $0.name == key.text }) else {
                let hint = closestKey(to: key.text).map { " (did you mean \"\($0)\"?)" } ?? ""
                throw DocumentError(line: key.line, column: key.column, message: "unknown key \"\(key.text)\"\(hint); the keys are \(documentKeys.map(\.name).joined(separator: ", "))")
            }
            guard seen.insert(key.text).inserted else { throw DocumentError(line: key.line, column: key.column, message: "\"\(key.text)\" is given twice") }
            if case .null = value.value { continue }
            func bool() throws -> Bool {
                guard case .bool(let b) = value.value else { throw fail("expected \(entry.kind)") }
                return b
            }
            func seconds() throws -> Double {
                guard case .number(let n) = value.value, n.isFinite, n >= 0 else { throw fail("expected \(entry.kind)") }
                return n
            }
            func strings() throws -> [String] {
                guard case .array(let items) = value.value else { throw fail("expected \(entry.kind)") }
                return try items.map { item in
                    guard case .string(let s) = item.value, !s.isEmpty else {
                        throw DocumentError(line: item.line, column: item.column, message: "\"\(key.text)\": every item must be a non-empty string")
                    }
                    return s
                }
            }
            func resolution() throws -> String {
                guard case .string(let s) = value.value, parseResolution(s) != nil else { throw fail("expected \(entry.kind) such as \"1280x720\"") }
                return s
            }
            func whole() throws -> UInt64 {
                guard case .number(let n) = value.value, n >= 0, n < 0x1p63, n.rounded() == n else { throw fail("expected \(entry.kind)") }
                return UInt64(n)
            }
            func wholes() throws -> [Int] {
                guard case .array(let items) = value.value else { throw fail("expected \(entry.kind)") }
                return try items.map { item in
                    guard case .number(let n) = item.value, n >= 0, n < 0x1p31, n.rounded() == n else {
                        throw DocumentError(line: item.line, column: item.column, message: "\"\(key.text)\": every item must be a whole number")
                    }
                    return Int(n)
                }
            }
            switch key.text {
            case "maxBitDepth":
                // Either form replaces what a base (a preset) said of the key.
                if case .object(let depths) = value.value {
                    policy.maxBitDepthByFamily = try Self.byFamily(depths, key: "maxBitDepth", example: "8") { n in
                        n >= 1 && n <= 16 && n.rounded() == n ? Int(n) : nil
                    }
                    policy.maxBitDepth = nil
                } else {
                    policy.maxBitDepth = Int(clamping: try whole())
                    policy.maxBitDepthByFamily = nil
                }
            case "allowChroma":
                let values = try strings()
                for value in values where PictureFormat.Chroma(rawValue: value) == nil { throw fail("\"\(value)\" is not one of 4:2:0, 4:2:2, 4:4:4, 4:0:0") }
                policy.allowChroma = values
            case "allowInterlaced": policy.allowInterlaced = try bool()
            case "allowRotation": policy.allowRotation = try bool()
            case "maxFrameRate": policy.maxFrameRate = try seconds()
            case "requireConstantFrameRate": policy.requireConstantFrameRate = try bool()
            case "maxConsecutiveBFrames": policy.maxConsecutiveBFrames = Int(clamping: try whole())
            case "requireClosedGOP": policy.requireClosedGOP = try bool()
            case "editLists":
                guard case .string(let text) = value.value, ["none", "offset", "any"].contains(text) else { throw fail("expected \(entry.kind)") }
                policy.editLists = text
            case "maxVideoBitRate": policy.maxVideoBitRate = try whole()
            case "maxGOPBitRate": policy.maxGOPBitRate = try whole()
            case "maxFileSize": policy.maxFileSize = try whole()
            case "allowAudioChannels": policy.allowAudioChannels = try wholes()
            case "allowAudioSampleRates": policy.allowAudioSampleRates = try wholes()
            case "allowHDR":
                let values = try strings()
                for value in values where !["HDR10", "Dolby Vision", "PQ", "HLG"].contains(value) { throw fail("\"\(value)\" is not one of HDR10, Dolby Vision, PQ, HLG") }
                policy.allowHDR = values
            case "fragmentedCodecs": policy.fragmentedCodecs = try strings()
            case "maxLevel":
                guard case .object(let levels) = value.value else { throw fail("expected \(entry.kind)") }
                policy.maxLevel = try Self.byFamily(levels, key: "maxLevel", example: "4.2") { n in n.isFinite && n > 0 && n < 100 ? n : nil }
            case "requireFaststart": policy.requireFaststart = try bool()
            case "allowFragmented": policy.allowFragmented = try bool()
            case "conformance": policy.conformance = try bool()
            case "maxStartupBytes":
                guard case .number(let n) = value.value, n >= 0, n < 0x1p63, n.rounded() == n else { throw fail("expected \(entry.kind)") }
                policy.maxStartupBytes = UInt64(n)
            case "maxKeyframeInterval": policy.maxKeyframeInterval = try seconds()
            case "maxInterleave": policy.maxInterleave = try seconds()
            case "maxDuration": policy.maxDuration = try seconds()
            case "allowCodecs": policy.allowCodecs = try strings()
            case "allowBrands": policy.allowBrands = try strings()
            case "minResolution": policy.minResolution = try resolution()
            case "maxResolution": policy.maxResolution = try resolution()
            default: break
            }
        }
        return policy
    }

    /// An object of values by codec family (`avc`, `hevc`, `av1`, `vp9`), each checked by `value`.
    static func byFamily<T>(_ members: [(key: (text: String, line: Int, column: Int), value: PositionedJSON)], key: String, example: String, value: (Double) -> T?) throws -> [String: T] {
        var result: [String: T] = [:]
        for (family, item) in members {
            let families = Set(Track.codingFamilies.values)
            guard families.contains(family.text) else {
                throw DocumentError(line: family.line, column: family.column, message: "\"\(key)\": \"\(family.text)\" is not a codec family (\(families.sorted().joined(separator: ", ")))")
            }
            guard case .number(let n) = item.value, let checked = value(n) else {
                throw DocumentError(line: item.line, column: item.column, message: "\"\(key)\": \"\(family.text)\" needs a value such as \(example)")
            }
            result[family.text] = checked
        }
        return result
    }

    /// The known key nearest to `key` (case-insensitive edit distance at most 3).
    static func closestKey(to key: String) -> String? {
        func distance(_ a: [Character], _ b: [Character]) -> Int {
            guard a.count < 64, b.count < 64 else { return Int.max }
            var previous = Array(0...b.count)
            for (i, ca) in a.enumerated() {
                var current = [i + 1]
                for (j, cb) in b.enumerated() {
                    current.append(min(previous[j + 1] + 1, current[j] + 1, previous[j] + (ca == cb ? 0 : 1)))
                }
                previous = current
            }
            return previous[b.count]
        }
        let lower = Array(key.lowercased())
        let best = documentKeys.map { ($0.name, distance(lower, Array($0.name.lowercased()))) }.min { $0.1 < $1.1 }
        guard let best, best.1 <= 3 else { return nil }
        return best.0
    }
}

/// A JSON value with the position it started at.
struct PositionedJSON {
    indirect enum Value {
        case object([(key: (text: String, line: Int, column: Int), value: PositionedJSON)])
        case array([PositionedJSON])
        case string(String)
        case number(Double)
        case bool(Bool)
        case null
    }
    var value: Value
    var line: Int
    var column: Int
}

/// A small strict JSON reader (RFC 8259) that keeps line and column; nesting is bounded.
struct JSONReader {
    let bytes: [UInt8]
    var index = 0
    var line = 1
    var lineStart = 0
    static let maxDepth = 64

    init(bytes: [UInt8]) {
        self.bytes = bytes
        // A UTF-8 byte order mark is tolerated.
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { index = 3; lineStart = 3 }
    }

    var column: Int { index - lineStart + 1 }

    func error(_ message: String) -> CheckPolicy.DocumentError {
        CheckPolicy.DocumentError(line: line, column: column, message: message)
    }

    mutating func document() throws -> PositionedJSON {
        skipSpace()
        let value = try parseValue(depth: 0)
        skipSpace()
        guard index == bytes.count else { throw error("unexpected text after the JSON value") }
        return value
    }

    mutating func skipSpace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0D: index += 1
            case 0x0A: index += 1; line += 1; lineStart = index
            default: return
            }
        }
    }

    mutating func parseValue(depth: Int) throws -> PositionedJSON {
        guard depth < Self.maxDepth else { throw error("nested deeper than \(Self.maxDepth) levels") }
        guard index < bytes.count else { throw error("the document ends where a value was expected") }
        let startLine = line, startColumn = column
        func positioned(_ value: PositionedJSON.Value) -> PositionedJSON { PositionedJSON(value: value, line: startLine, column: startColumn) }
        switch bytes[index] {
        case UInt8(ascii: "{"):
            index += 1
            var members: [(key: (text: String, line: Int, column: Int), value: PositionedJSON)] = []
            skipSpace()
            if index < bytes.count && bytes[index] == UInt8(ascii: "}") { index += 1; return positioned(.object(members)) }
            while true {
                skipSpace()
                let keyLine = line, keyColumn = column
                guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { throw error("expected a key in double quotes") }
                let key = try parseString()
                skipSpace()
                guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { throw error("expected ':' after the key \"\(key)\"") }
                index += 1
                skipSpace()
                members.append(((key, keyLine, keyColumn), try parseValue(depth: depth + 1)))
                skipSpace()
                guard index < bytes.count else { throw error("the document ends inside an object (missing '}')") }
                if bytes[index] == UInt8(ascii: ",") { index += 1; continue }
                if bytes[index] == UInt8(ascii: "}") { index += 1; return positioned(.object(members)) }
                throw error("expected ',' or '}'")
            }
        case UInt8(ascii: "["):
            index += 1
            var items: [PositionedJSON] = []
            skipSpace()
            if index < bytes.count && bytes[index] == UInt8(ascii: "]") { index += 1; return positioned(.array(items)) }
            while true {
                skipSpace()
                items.append(try parseValue(depth: depth + 1))
                skipSpace()
                guard index < bytes.count else { throw error("the document ends inside a list (missing ']')") }
                if bytes[index] == UInt8(ascii: ",") { index += 1; continue }
                if bytes[index] == UInt8(ascii: "]") { index += 1; return positioned(.array(items)) }
                throw error("expected ',' or ']'")
            }
        case UInt8(ascii: "\""):
            return positioned(.string(try parseString()))
        case UInt8(ascii: "t"), UInt8(ascii: "f"), UInt8(ascii: "n"):
            for (word, value) in [("true", PositionedJSON.Value.bool(true)), ("false", .bool(false)), ("null", .null)] where bytes[index...].starts(with: word.utf8) {
                index += word.utf8.count
                return positioned(value)
            }
            throw error("unexpected word (true, false and null are lower case)")
        default:
            return positioned(.number(try parseNumber()))
        }
    }

    mutating func parseString() throws -> String {
        index += 1  // the opening quote
        var scalars = String.UnicodeScalarView()
        var raw: [UInt8] = []
        func flush() { scalars.append(contentsOf: String(decoding: raw, as: UTF8.self).unicodeScalars); raw.removeAll() }
        while index < bytes.count {
            let byte = bytes[index]
            index += 1
            switch byte {
            case UInt8(ascii: "\""):
                flush()
                return String(scalars)
            case UInt8(ascii: "\\"):
                guard index < bytes.count else { break }
                let escape = bytes[index]
                index += 1
                let simple: [UInt8: UInt8] = [0x22: 0x22, 0x5C: 0x5C, 0x2F: 0x2F, 0x62: 0x08, 0x66: 0x0C, 0x6E: 0x0A, 0x72: 0x0D, 0x74: 0x09]
                if let replacement = simple[escape] { raw.append(replacement); continue }
                guard escape == UInt8(ascii: "u"), index + 4 <= bytes.count, let code = UInt32(String(decoding: bytes[index..<index + 4], as: UTF8.self), radix: 16) else {
                    throw error("invalid escape in a string")
                }
                index += 4
                flush()
                scalars.append(Unicode.Scalar(code) ?? "\u{FFFD}")
            case 0x00..<0x20:
                throw error("a string contains a control character (a line break inside quotes?)")
            default:
                raw.append(byte)
            }
        }
        throw error("the document ends inside a string (missing '\"')")
    }

    mutating func parseNumber() throws -> Double {
        let start = index
        while index < bytes.count, "+-0123456789.eE".utf8.contains(bytes[index]) { index += 1 }
        let text = String(decoding: bytes[start..<index], as: UTF8.self)
        guard !text.isEmpty, let number = Double(text), number.isFinite, !text.hasPrefix("+"), !text.hasPrefix(".") else {
            index = start
            throw error(text.isEmpty ? "unexpected character '\(String(decoding: [bytes[start]], as: UTF8.self))'" : "'\(text)' is not a number")
        }
        return number
    }
}
