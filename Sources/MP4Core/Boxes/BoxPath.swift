/// Where a box sits in the tree: `moov/trak[2]/mdia/minf/stbl/stco`.
///
/// A component carries the box type and, when its parent has several children of that type,
/// the 1-based position among them (`trak[2]`).
public struct BoxPath: Hashable, Sendable, CustomStringConvertible, Codable {
    /// One step of a path.
    public struct Component: Hashable, Sendable {
        /// The box type.
        public var type: FourCC
        /// 1-based position among siblings of the same type, or `nil` when it is the only one.
        public var ordinalNumber: Int?

        /// Creates a component.
        public init(_ type: FourCC, ordinalNumber: Int? = nil) {
            self.type = type
            self.ordinalNumber = ordinalNumber
        }
    }

    /// The steps from the top level down.
    public var components: [Component]

    /// A path from components.
    public init(_ components: [Component] = []) { self.components = components }

    /// The path of a top-level box.
    public static func top(_ type: FourCC, ordinalNumber: Int? = nil) -> BoxPath {
        BoxPath([Component(type, ordinalNumber: ordinalNumber)])
    }

    /// This path extended by one step.
    public func appending(_ type: FourCC, ordinalNumber: Int? = nil) -> BoxPath {
        BoxPath(components + [Component(type, ordinalNumber: ordinalNumber)])
    }

    /// Nesting depth (1 for a top-level box).
    public var depth: Int { components.count }

    public var description: String {
        var text = ""
        for c in components {
            if !text.isEmpty { text += "/" }
            text += c.type.description
            if let n = c.ordinalNumber { text += "[" + String(n) + "]" }
        }
        return text
    }

    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        var parts: [Component] = []
        for piece in text.split(separator: "/") {
            var name = String(piece)
            var number: Int?
            if name.hasSuffix("]"), let open = name.lastIndex(of: "[") {
                number = Int(name[name.index(after: open)..<name.index(before: name.endIndex)])
                name = String(name[..<open])
            }
            guard let type = FourCC(name) ?? (name.hasPrefix("0x") ? UInt32(name.dropFirst(2), radix: 16).map(FourCC.init(rawValue:)) : nil) else {
                throw MP4Error(.malformed, "bad box path component \(piece)")
            }
            parts.append(Component(type, ordinalNumber: number))
        }
        self.components = parts
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }
}
