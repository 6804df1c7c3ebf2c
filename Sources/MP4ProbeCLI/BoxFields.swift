import MP4Core

/// The key fields of a parsed box, shared by the text and JSON box trees.
enum BoxFields {
    /// Ordered key fields of `node` (empty for containers and raw boxes).
    static func fields(of node: BoxNode) -> [(String, JSONValue)] {
        switch node.content {
        case .container, .raw: return []
        case .model(let model): return model.base.fields.map { ($0.name, jsonValue($0.value)) }
        case .fileType(let f):
            return [("majorBrand", .string(f.majorBrand.description)), ("minorVersion", .uint(UInt64(f.minorVersion))), ("compatibleBrands", .array(f.compatibleBrands.map { .string($0.description) }))]
        case .sampleDescription(let count), .dataReference(let count):
            return [("entryCount", .uint(UInt64(count)))]
        case .sampleEntry(let e):
            var fields: [(String, JSONValue)] = [("codec", .string(e.codecString)), ("dataReferenceIndex", .uint(UInt64(e.dataReferenceIndex)))]
            if let w = e.width, let h = e.height { fields += [("width", .uint(UInt64(w))), ("height", .uint(UInt64(h)))] }
            if let c = e.compressorName, !c.isEmpty { fields.append(("compressorName", .string(c))) }
            if let c = e.channelCount { fields.append(("channelCount", .uint(UInt64(c)))) }
            if let s = e.sampleSize { fields.append(("sampleSize", .uint(UInt64(s)))) }
            if let r = e.sampleRate { fields.append(("sampleRate", .double(r))) }
            if let v = e.soundVersion, v > 0 { fields.append(("soundVersion", .uint(UInt64(v)))) }
            if let o = e.originalFormat { fields.append(("originalFormat", .string(o.description))) }
            if let s = e.protectionScheme { fields.append(("protectionScheme", .string(s.description))) }
            if let n = e.textNamespace { fields.append(("namespace", .string(n))) }
            return fields
        case .codecConfiguration(let c):
            return configurationFields(c)
        case .table(let t):
            var fields: [(String, JSONValue)] = [("entryCount", .uint(UInt64(t.entryCount)))]
            if t.kind == .sampleSize { fields += [("sampleSize", .uint(UInt64(t.constantSampleSize))), ("sampleCount", .uint(UInt64(t.sampleCount)))] }
            if t.kind == .compactSampleSize { fields += [("fieldSize", .uint(UInt64(t.fieldSize))), ("sampleCount", .uint(UInt64(t.sampleCount)))] }
            return fields
        case .invalid(let error):
            return [("error", .string(error.message))]
        }
    }


    static func configurationFields(_ c: CodecConfiguration) -> [(String, JSONValue)] {
        switch c {
        case let .avc(profile, compatibility, level):
            return [("profile", .uint(UInt64(profile))), ("compatibility", .uint(UInt64(compatibility))), ("level", .uint(UInt64(level)))]
        case let .hevc(space, tier, profile, compat, _, level):
            return [("profileSpace", .uint(UInt64(space))), ("tier", .string(tier ? "high" : "main")), ("profile", .uint(UInt64(profile))), ("compatibilityFlags", .uint(UInt64(compat))), ("level", .uint(UInt64(level)))]
        case let .av1(profile, level, tier, depth, mono):
            return [("profile", .uint(UInt64(profile))), ("level", .uint(UInt64(level))), ("tier", .uint(UInt64(tier))), ("bitDepth", .uint(UInt64(depth))), ("monochrome", .bool(mono))]
        case let .vp(profile, level, depth):
            return [("profile", .uint(UInt64(profile))), ("level", .uint(UInt64(level))), ("bitDepth", .uint(UInt64(depth)))]
        case let .mpeg4(oti, aot, channels, frequency, avg, max):
            return [("objectTypeIndication", .uint(UInt64(oti))), ("audioObjectType", .optional(aot) { .uint(UInt64($0)) }), ("channelConfiguration", .optional(channels) { .uint(UInt64($0)) }), ("samplingFrequency", .optional(frequency) { .uint(UInt64($0)) }), ("averageBitRate", .uint(UInt64(avg))), ("maxBitRate", .uint(UInt64(max)))]
        case let .opus(channels, preSkip, rate):
            return [("outputChannelCount", .uint(UInt64(channels))), ("preSkip", .uint(UInt64(preSkip))), ("inputSampleRate", .uint(UInt64(rate)))]
        case let .ac3(channels, lfe, rate):
            return [("channelCount", .uint(UInt64(channels))), ("lfe", .bool(lfe)), ("bitRateKbps", .optional(rate) { .uint(UInt64($0)) })]
        case let .eac3(rate, substreams, channels):
            var fields: [(String, JSONValue)] = [("dataRateKbps", .uint(UInt64(rate))), ("independentSubstreams", .uint(UInt64(substreams)))]
            if let channels { fields.append(("channelCount", .uint(UInt64(channels)))) }
            return fields
        case let .alac(depth, channels, rate):
            return [("bitDepth", .uint(UInt64(depth))), ("channelCount", .uint(UInt64(channels))), ("sampleRate", .uint(UInt64(rate)))]
        case let .flac(rate, channels, bits):
            return [("sampleRate", .uint(UInt64(rate))), ("channelCount", .uint(UInt64(channels))), ("bitsPerSample", .uint(UInt64(bits)))]
        }
    }

    /// A dump value as JSON.
    static func jsonValue(_ value: FieldValue) -> JSONValue {
        switch value {
        case .int(let v): return .int(v)
        case .uint(let v): return .uint(v)
        case .double(let v): return .double(v)
        case .string(let v): return .string(v)
        case .bool(let v): return .bool(v)
        case .list(let items): return .array(items.map(jsonValue))
        case .null: return .null
        }
    }

    /// The entries of a table-like box, decoded one row at a time (a `stsz` may hold millions:
    /// output streams them, memory does not grow with the table).
    struct EntryTable {
        var names: [String]
        /// Rows to print: the table's entries up to the `--entries` limit.
        var count: Int
        /// Entries in the table.
        var total: Int
        var row: (Int) -> [JSONValue]
    }

    /// The entries of a table-like box, for `--full`, bounded by `limit`.
    static func entries(of node: BoxNode, limit: Int) -> EntryTable? {
        func table(_ names: [String], _ total: Int, _ row: @escaping (Int) -> [JSONValue]) -> EntryTable {
            EntryTable(names: names, count: min(total, max(limit, 0)), total: total, row: row)
        }
        switch node.content {
        case .table(let t):
            return table(t.kind.fieldNames, t.entryCount) { i in t.entry(at: i).map { JSONValue.int($0) } }
        case .model(let model):
            guard let tabular = model.base as? any TabularBoxModel else { return nil }
            return table(type(of: tabular).entryFieldNames, tabular.entryCount) { i in tabular.entryFields(at: i).map(jsonValue) }
        case .fileType(let f):
            return table(["brand"], f.compatibleBrands.count) { i in [.string(f.compatibleBrands[i].description)] }
        default:
            return nil
        }
    }
}
