import MP4Core
import MP4Report

/// `mp4probe boxes`: the box tree with offsets, sizes, version/flags and key fields.
enum BoxesReport {
    static let schemaVersion = 1

    struct Options {
        /// Print levels up to this depth (1 = top level only); `nil` for all.
        var maxDepth: Int?
        /// Print table entries.
        var full: Bool
        /// At most this many entries per table with `full`.
        var entryLimit: Int
    }

    /// Writes the JSON report to `output`, streaming table entries (`--full`).
    static func writeJSON(_ file: MP4File, options: Options, pretty: Bool, to output: some TextOutput) {
        var tables: [BoxFields.EntryTable] = []
        let document = json(file, options: options, tables: &tables)
        JSONValue.stream(document, pretty: pretty, to: output) { index, emit in
            let table = tables[index]
            for row in 0..<table.count { emit(.array(table.row(row))) }
        }
        output.write("\n")
    }

    /// The document, with each `--full` table as a streamed array whose rows `tables` holds.
    static func json(_ file: MP4File, options: Options, tables: inout [BoxFields.EntryTable]) -> JSONValue {
        let nodes = zip(file.topLevelNodes, BoxNode.childPaths(file.topLevelNodes, parent: BoxPath()))
        var boxes: [JSONValue] = []
        for (node, path) in nodes { boxes.append(nodeJSON(node, path: path, depth: 1, options: options, tables: &tables)) }
        return .object([
            ("schemaVersion", .int(Int64(schemaVersion))),
            ("file", .object([("name", .string(file.name)), ("size", .uint(file.layout.fileSize))])),
            ("boxes", .array(boxes)),
            ("findings", .array(file.findings.map(InfoReport.findingJSON))),
        ])
    }

    static func nodeJSON(_ node: BoxNode, path: BoxPath, depth: Int, options: Options, tables: inout [BoxFields.EntryTable]) -> JSONValue {
        var members: [(String, JSONValue)] = [
            ("type", .string(node.type.description)),
            ("path", .string(path.description)),
            ("name", .optional(name(of: node, path: path), JSONValue.string)),
            ("offset", .uint(node.header.offset)),
            ("size", .uint(node.header.size)),
            ("headerSize", .int(Int64(node.header.headerSize))),
            ("version", .optional(node.version) { .uint(UInt64($0)) }),
            ("flags", .optional(node.flags) { .uint(UInt64($0)) }),
            ("truncated", .bool(node.isTruncated)),
        ]
        if node.header.usesLargeSize { members.append(("largeSize", .bool(true))) }
        if node.header.extendsToEnd { members.append(("extendsToEnd", .bool(true))) }
        if let uuid = node.header.userTypeString { members.append(("userType", .string(uuid))) }
        let fields = BoxFields.fields(of: node)
        if !fields.isEmpty { members.append(("fields", .object(fields))) }
        if options.full, let table = BoxFields.entries(of: node, limit: options.entryLimit) {
            members.append(("entryFields", .array(table.names.map { .string($0) })))
            members.append(("entries", .streamedArray(tables.count)))
            tables.append(table)
        }
        if !node.children.isEmpty, options.maxDepth.map({ depth < $0 }) ?? true {
            let paths = BoxNode.childPaths(node.children, parent: path)
            var children: [JSONValue] = []
            for (child, childPath) in zip(node.children, paths) { children.append(nodeJSON(child, path: childPath, depth: depth + 1, options: options, tables: &tables)) }
            members.append(("children", .array(children)))
        }
        return .object(members)
    }

    static func name(of node: BoxNode, path: BoxPath) -> String? {
        if path.components.dropLast().last?.type == .stsd { return "SampleEntry" }
        return BoxCatalog.descriptor(for: node.type)?.name
    }

    /// Writes the text report to `output` in pieces of about 64 KiB (`--full` tables may have
    /// millions of rows).
    static func writeText(_ file: MP4File, options: Options, to output: some TextOutput) {
        var out = "\(file.name): \(Format.grouped(file.layout.fileSize)) bytes\n"
        let flush = { (out: inout String) in
            if out.utf8.count >= 1 << 16 { output.write(out); out = "" }
        }
        for (node, path) in zip(file.topLevelNodes, BoxNode.childPaths(file.topLevelNodes, parent: BoxPath())) {
            write(node, path: path, depth: 1, options: options, into: &out, flush: flush)
        }
        if file.layout.unparsedTailByteCount > 0 {
            out += "(\(file.layout.unparsedTailByteCount) bytes at the end do not form a box)\n"
        }
        let problems = file.findings.filter { $0.severity != .info }
        if !problems.isEmpty {
            out += "Findings:\n"
            for finding in problems { out += "  \(finding)\n" }
        }
        output.write(out)
    }

    static func write(_ node: BoxNode, path: BoxPath, depth: Int, options: Options, into out: inout String, flush: (inout String) -> Void) {
        let indent = String(repeating: "  ", count: depth - 1)
        let label = path.components.last.map { c in c.ordinalNumber.map { "\(c.type)[\($0)]" } ?? c.type.description } ?? node.type.description
        var line = "\(indent)\(label) @\(node.header.offset) size \(node.header.size)"
        if node.header.usesLargeSize { line += " (64-bit)" }
        if node.header.extendsToEnd { line += " (size 0: to end)" }
        if let version = node.version, let flags = node.flags { line += " v\(version) flags \(Format.hexFlags(flags))" }
        if let uuid = node.header.userTypeString { line += " uuid \(uuid)" }
        if node.isTruncated { line += " TRUNCATED" }
        let fields = BoxFields.fields(of: node)
        if !fields.isEmpty {
            line += "  " + fields.map { "\($0.0)=\(textValue($0.1))" }.joined(separator: " ")
        }
        if node.type == .mdat { line += "  (media data, not read)" }
        out += line + "\n"
        if options.full, let table = BoxFields.entries(of: node, limit: options.entryLimit) {
            for index in 0..<table.count {
                out += "\(indent)    [\(index)] " + zip(table.names, table.row(index)).map { "\($0.0)=\(textValue($0.1))" }.joined(separator: " ") + "\n"
                flush(&out)
            }
            if table.total > table.count {
                out += "\(indent)    ... \(Format.count(table.total - table.count, "more entry", plural: "more entries")) (--entries N to print more)\n"
            }
        }
        flush(&out)
        guard options.maxDepth.map({ depth < $0 }) ?? true else {
            if !node.children.isEmpty { out += "\(indent)  ... \(Format.count(node.children.count, "child box", plural: "child boxes")) (raise --depth)\n" }
            return
        }
        for (child, childPath) in zip(node.children, BoxNode.childPaths(node.children, parent: path)) {
            write(child, path: childPath, depth: depth + 1, options: options, into: &out, flush: flush)
        }
    }

    static func textValue(_ value: JSONValue) -> String {
        switch value {
        case .string(let raw):
            let s = raw.replacingControlCharacters()
            return s.contains(" ") || s.isEmpty ? "\"\(s)\"" : s
        case .array(let items): return "[" + items.map(textValue).joined(separator: ",") + "]"
        case .double(let d): return d == d.rounded() && abs(d) < 1e15 ? String(Int64(d)) : Format.fixed(d, 3)
        default: return value.rendered(pretty: false)
        }
    }
}
