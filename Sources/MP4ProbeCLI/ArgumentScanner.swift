/// A small command-line scanner: flags (`--json`), options with values (`--depth 3` or
/// `--depth=3`) and positional arguments, with errors that name the offending argument.
struct ArgumentScanner {
    struct UsageError: Error, CustomStringConvertible {
        var description: String
    }

    private(set) var positionals: [String] = []
    private var flags: Set<String> = []
    private var values: [String: [String]] = [:]

    /// Scans `arguments` given the accepted flags and value options (names without dashes).
    init(_ arguments: [String], flags allowedFlags: Set<String>, options allowedOptions: Set<String>) throws {
        var index = 0
        var onlyPositionals = false
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            if onlyPositionals || !argument.hasPrefix("-") || argument == "-" {
                positionals.append(argument)
                continue
            }
            if argument == "--" { onlyPositionals = true; continue }
            var name = String(argument.drop(while: { $0 == "-" }))
            var inlineValue: String?
            if let equals = name.firstIndex(of: "=") {
                inlineValue = String(name[name.index(after: equals)...])
                name = String(name[..<equals])
            }
            if name == "h" { name = "help" }
            if name == "o" && allowedOptions.contains("output") { name = "output" }
            if allowedFlags.contains(name) {
                if inlineValue != nil { throw UsageError(description: "option --\(name) takes no value") }
                flags.insert(name)
            } else if allowedOptions.contains(name) {
                if let inlineValue {
                    values[name, default: []].append(inlineValue)
                } else if index < arguments.count {
                    values[name, default: []].append(arguments[index])
                    index += 1
                } else {
                    throw UsageError(description: "option --\(name) needs a value")
                }
            } else {
                throw UsageError(description: "unknown option \(argument)")
            }
        }
    }

    func flag(_ name: String) -> Bool { flags.contains(name) }

    /// The one positional argument, FILE.
    func singleFile() throws -> String {
        guard positionals.count == 1, let location = positionals.first else {
            throw UsageError(description: positionals.isEmpty ? "missing FILE" : "expected one FILE, got \(positionals.count)")
        }
        return location
    }

    /// The last value given for option `name`.
    func value(_ name: String) -> String? { values[name]?.last }

    /// Every value given for a repeatable option, as given.
    func values(_ name: String) -> [String] { values[name] ?? [] }

    /// Every value given for a repeatable option, comma-separated lists split.
    func list(_ name: String) -> [String]? {
        guard let given = values[name] else { return nil }
        return given.flatMap { $0.split(separator: ",").map { String($0).trimmingSpaces() } }.filter { !$0.isEmpty }
    }

    /// A non-negative number of seconds (`2.5`).
    func seconds(_ name: String) throws -> Double? {
        guard let text = value(name) else { return nil }
        guard let number = Double(text), number.isFinite, number >= 0 else {
            throw UsageError(description: "--\(name) expects a number of seconds, not '\(text)'")
        }
        return number
    }

    /// A non-negative integer option, accepting binary suffixes (`64K`, `256M`, `1G`).
    func size(_ name: String) throws -> UInt64? {
        guard let text = value(name) else { return nil }
        let multipliers: [Character: UInt64] = ["K": 1 << 10, "M": 1 << 20, "G": 1 << 30]
        var digits = Substring(text.uppercased())
        var multiplier: UInt64 = 1
        if digits.hasSuffix("IB") { digits = digits.dropLast(2) } else if digits.hasSuffix("B") { digits = digits.dropLast() }
        if let last = digits.last, let m = multipliers[last] {
            multiplier = m
            digits = digits.dropLast()
        }
        guard let number = UInt64(digits), case let (product, overflow) = number.multipliedReportingOverflow(by: multiplier), !overflow else {
            throw UsageError(description: "--\(name) expects a size such as 65536, 64K or 256M, not '\(text)'")
        }
        return product
    }

    func integer(_ name: String) throws -> Int? {
        guard let text = value(name) else { return nil }
        guard let number = Int(text), number >= 0 else {
            throw UsageError(description: "--\(name) expects a non-negative integer, not '\(text)'")
        }
        return number
    }
}

