import MP4Core

/// The key fields of a parsed box, shared by the text and JSON box trees.
enum BoxFields {
    /// Ordered key fields of `node` (empty for containers and raw boxes), as the core renders
    /// them (``BoxNode/fields``).
    static func fields(of node: BoxNode) -> [(String, JSONValue)] {
        node.fields.map { ($0.name, jsonValue($0.value)) }
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
        guard let tabular = node.tabularModel else { return nil }
        return table(type(of: tabular).entryFieldNames, tabular.entryCount) { i in tabular.entryFields(at: i).map(jsonValue) }
    }
}
