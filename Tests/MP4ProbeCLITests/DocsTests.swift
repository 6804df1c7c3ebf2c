import Foundation
import Testing
@testable import MP4ProbeCLI
import MP4Core
import MP4TestSupport

/// The documentation is checked like code (issue 20 item 5):
/// - every ```swift block of docs/ and README.md is compiled: it must appear verbatim in
///   Tests/DocExamplesTests/DocExamples.swift between `// docs:begin` and `// docs:end`;
/// - every transcript (`$ mp4probe ...` in a fenced block) is run against SampleMedia and its
///   output compared with what the page shows;
/// - every other `mp4probe ...` line in a fenced block names a command and only options that
///   command has.
@Suite struct DocsTests {
    struct Block { var file: String; var line: Int; var info: String; var lines: [String] }

    static let pages: [String] = {
        let docs = Fixtures.packageRoot + "/docs"
        return FileSystem.list(docs).filter { $0.hasSuffix(".md") }.sorted().map { docs + "/" + $0 } + [Fixtures.packageRoot + "/README.md"]
    }()

    /// docs/architecture.md stays true: every Swift name it puts in backticks (a type, or
    /// `Type.member`) exists in Sources, so a rename or a removal fails here until the page
    /// follows.
    @Test func architectureNamesExist() throws {
        let page = String(decoding: try #require(FileSystem.read(Fixtures.packageRoot + "/docs/architecture.md")), as: UTF8.self)
        // What Sources and Tests declare: type names and member names.
        var types: Set<String> = [], members: Set<String> = [], directories: Set<String> = []
        let declaration = try NSRegularExpression(pattern: "\\b(struct|enum|protocol|actor|class|typealias|extension|var|let|func|case) +([A-Za-z_][A-Za-z0-9_]*)")
        for top in ["Sources", "Tests"] {
            let root = Fixtures.packageRoot + "/" + top
            for case let relative as String in FileManager.default.enumerator(atPath: root)?.allObjects ?? [] {
                if !relative.contains(".") { directories.insert(String(relative.split(separator: "/").last ?? "")) }
                guard relative.hasSuffix(".swift"), let bytes = FileSystem.read(root + "/" + relative) else { continue }
                let text = String(decoding: bytes, as: UTF8.self)
                for match in declaration.matches(in: text, range: NSRange(text.startIndex..., in: text)) {
                    guard let kind = Range(match.range(at: 1), in: text), let name = Range(match.range(at: 2), in: text) else { continue }
                    if ["var", "let", "func", "case"].contains(String(text[kind])) { members.insert(String(text[name])) } else { types.insert(String(text[name])) }
                }
            }
        }
        let reference = try NSRegularExpression(pattern: "`([A-Z][A-Za-z0-9]*[a-z][A-Za-z0-9]*)(?:\\.([a-z][A-Za-z0-9]+))?`")
        var missing: [String] = []
        var checked = 0
        for match in reference.matches(in: page, range: NSRange(page.startIndex..., in: page)) {
            guard let typeRange = Range(match.range(at: 1), in: page) else { continue }
            let type = String(page[typeRange])
            // Spec words in backticks (`MovieBox`) and module or target names are not types.
            if ["MovieBox"].contains(type) || directories.contains(type) { continue }
            checked += 1
            if !types.contains(type) { missing.append(type); continue }
            if let memberRange = Range(match.range(at: 2), in: page) {
                let member = String(page[memberRange])
                if member != "swift" && !members.contains(member) { missing.append(type + "." + member) }
            }
        }
        #expect(checked > 50, "only \(checked) names found: the pattern no longer matches the page")
        #expect(missing.isEmpty, "docs/architecture.md names what Sources and Tests lack: \(missing)")
    }

    static func blocks() -> [Block] {
        var result: [Block] = []
        for page in pages {
            guard let bytes = FileSystem.read(page) else { continue }
            let lines = String(decoding: bytes, as: UTF8.self).components(separatedBy: "\n")
            var current: Block?
            for (number, line) in lines.enumerated() {
                let trimmed = line.trimmingCharacters(in: .whitespaces)
                if trimmed.hasPrefix("```") {
                    if let block = current {
                        result.append(block)
                        current = nil
                    } else {
                        current = Block(file: page.replacingOccurrences(of: Fixtures.packageRoot + "/", with: ""), line: number + 1, info: String(trimmed.dropFirst(3)), lines: [])
                    }
                } else if current != nil {
                    current?.lines.append(line)
                }
            }
        }
        return result
    }

    /// Lines without their common indentation and without blank lines at either end.
    static func normalized(_ lines: [String]) -> [String] {
        var lines = lines
        while lines.first?.trimmingCharacters(in: .whitespaces).isEmpty == true { lines.removeFirst() }
        while lines.last?.trimmingCharacters(in: .whitespaces).isEmpty == true { lines.removeLast() }
        let indent = lines.filter { !$0.trimmingCharacters(in: .whitespaces).isEmpty }.map { $0.prefix { $0 == " " }.count }.min() ?? 0
        return lines.map { $0.count >= indent ? String($0.dropFirst(indent)) : $0.trimmingCharacters(in: .whitespaces) }
    }

    /// A paragraph of docs/ or the README that names `BoxContent` names only its cases (the
    /// redesign removed a dozen that docs/library.md still listed).
    @Test func boxContentCasesNamedInTheDocsExist() throws {
        let source = String(decoding: try #require(FileSystem.read(Fixtures.packageRoot + "/Sources/MP4Core/Tree/BoxNode.swift")), as: UTF8.self)
        let body = try #require(source.components(separatedBy: "public enum BoxContent").dropFirst().first?.components(separatedBy: "\n}").first)
        let cases = Set(body.components(separatedBy: "\n").compactMap { line -> String? in
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            guard trimmed.hasPrefix("case ") else { return nil }
            return String(trimmed.dropFirst(5).prefix { $0.isLetter || $0.isNumber })
        })
        #expect(cases.count >= 5, "\(cases)")
        let files = [Fixtures.packageRoot + "/README.md"] + FileSystem.list(Fixtures.packageRoot + "/docs").filter { $0.hasSuffix(".md") }.map { Fixtures.packageRoot + "/docs/" + $0 }
        var checked = 0
        for file in files {
            let text = String(decoding: FileSystem.read(file) ?? [], as: UTF8.self)
            for paragraph in text.components(separatedBy: "\n\n") where paragraph.contains("`BoxContent`") {
                var rest = Substring(paragraph)
                while let start = rest.range(of: "`.") {
                    let name = rest[start.upperBound...].prefix { $0.isLetter || $0.isNumber }
                    rest = rest[start.upperBound...]
                    guard rest.dropFirst(name.count).first == "`" else { continue }
                    checked += 1
                    #expect(cases.contains(String(name)), "\(file): `.\(name)` is not a case of BoxContent (\(cases.sorted()))")
                }
            }
        }
        #expect(checked >= 5, "the docs name \(checked) BoxContent cases")
    }

    @Test func swiftExamplesAreCompiled() throws {
        let examplesPath = Fixtures.packageRoot + "/Tests/DocExamplesTests/DocExamples.swift"
        let examples = String(decoding: try #require(FileSystem.read(examplesPath)), as: UTF8.self).components(separatedBy: "\n")
        var regions: [[String]] = []
        var region: [String]?
        for line in examples {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if trimmed == "// docs:begin" { region = []; continue }
            if trimmed == "// docs:end", let done = region { regions.append(Self.normalized(done)); region = nil; continue }
            region?.append(line)
        }
        let swiftBlocks = Self.blocks().filter { $0.info == "swift" }
        #expect(swiftBlocks.count >= 12)
        for block in swiftBlocks {
            var lines = Self.normalized(block.lines)
            // A manifest fragment is not Swift that compiles on its own.
            if lines.first == "// Package.swift" { continue }
            let imports = lines.prefix { $0.hasPrefix("import ") || $0.isEmpty }
            for module in imports where !module.isEmpty {
                #expect(examples.contains(module), "\(block.file):\(block.line): \(module) is not imported by the examples")
            }
            lines.removeFirst(imports.count)
            #expect(regions.contains(Self.normalized(lines)), "\(block.file):\(block.line): this example is not in Tests/DocExamplesTests/DocExamples.swift (so it is not compiled)")
            if lines.contains(where: { $0.contains("URL(") }) {
                #expect(imports.isEmpty || imports.contains("import Foundation"), "\(block.file):\(block.line): uses URL without import Foundation")
            }
        }
    }

    /// `$ mp4probe ARGS` followed by its output, up to the next `$` line or the block's end.
    @Test func transcriptsMatchTheBinary() async throws {
        var ran = 0
        for block in Self.blocks() where block.info.isEmpty || block.info == "console" || block.info == "sh" {
            var index = 0
            while index < block.lines.count {
                let line = block.lines[index]
                index += 1
                guard line.hasPrefix("$ mp4probe ") else { continue }
                var shown: [String] = []
                while index < block.lines.count, !block.lines[index].hasPrefix("$ ") {
                    shown.append(block.lines[index])
                    index += 1
                }
                let arguments = Self.words(String(line.dropFirst("$ mp4probe ".count)))
                // Transcripts name files the reader has: SampleMedia (or policy files shown
                // on the page, which are not run).
                guard arguments.allSatisfy({ !$0.contains("/") || $0.hasPrefix("SampleMedia/") }) else { continue }
                let resolved = arguments.map { $0.hasPrefix("SampleMedia/") ? Fixtures.packageRoot + "/" + $0 : $0 }
                let out = CapturedOutput(), err = CapturedOutput()
                _ = await MP4Probe.run(resolved, output: out, errors: err)
                let actual = (out.text + err.text).replacingOccurrences(of: Fixtures.packageRoot + "/", with: "")
                #expect(Self.normalized(actual.components(separatedBy: "\n")) == Self.normalized(shown), "\(block.file):\(block.line): `mp4probe \(arguments.joined(separator: " "))` prints\n\(actual)")
                ran += 1
            }
        }
        // The README's form: a `swift run mp4probe ARGS` block, then a block of its output.
        let all = Self.blocks()
        for (block, next) in zip(all, all.dropFirst()) where block.file == next.file && next.info.isEmpty {
            let command = Self.normalized(block.lines)
            guard command.count == 1, command[0].hasPrefix("swift run mp4probe ") else { continue }
            let arguments = Self.words(String(command[0].dropFirst("swift run mp4probe ".count)))
            let resolved = arguments.map { $0.hasPrefix("SampleMedia/") ? Fixtures.packageRoot + "/" + $0 : $0 }
            let out = CapturedOutput(), err = CapturedOutput()
            _ = await MP4Probe.run(resolved, output: out, errors: err)
            let actual = (out.text + err.text).replacingOccurrences(of: Fixtures.packageRoot + "/", with: "")
            #expect(Self.normalized(actual.components(separatedBy: "\n")) == Self.normalized(next.lines), "\(next.file):\(next.line): `\(command[0])` prints\n\(actual)")
            ran += 1
        }
        #expect(ran >= 4)
    }

    /// Every `mp4probe` line in a block names a real command and options it has.
    /// Every command of the table has a section in docs/cli.md and a row in the README's
    /// command table (a new command fails here until both say what it does).
    @Test func everyCommandIsDocumented() throws {
        let cli = String(decoding: try #require(FileSystem.read(Fixtures.packageRoot + "/docs/cli.md")), as: UTF8.self)
        let readme = String(decoding: try #require(FileSystem.read(Fixtures.packageRoot + "/README.md")), as: UTF8.self)
        for type in CommandTable.all {
            let command = type.spec.name
            #expect(cli.contains("## `mp4probe \(command)") || cli.contains("`mp4probe \(command)` and") || cli.contains("and `mp4probe \(command)`"), "docs/cli.md has no section for \(command)")
            let rows = readme.split(separator: "\n").filter { $0.hasPrefix("| ") }
            #expect(rows.contains { $0.contains("`mp4probe \(command)") }, "the README's command table lacks \(command)")
        }
    }

    /// The package's library products are the ones docs/library.md and docs/apple.md list
    /// (they listed two of four and three of four before MP4Report was checked).
    @Test func everyLibraryProductIsDocumented() throws {
        let manifest = String(decoding: try #require(FileSystem.read(Fixtures.packageRoot + "/Package.swift")), as: UTF8.self)
        let products = manifest.components(separatedBy: ".library(name: \"").dropFirst().compactMap { $0.split(separator: "\"").first.map(String.init) }
        #expect(products.count >= 4, "Package.swift's library products: \(products)")
        // Where each page lists them, to its next heading.
        for (page, start) in [("docs/library.md", "the products of `Package.swift`"), ("docs/apple.md", "The products are")] {
            let text = String(decoding: try #require(FileSystem.read(Fixtures.packageRoot + "/" + page)), as: UTF8.self)
            let from = try #require(text.range(of: start), "\(page) has no listing that starts '\(start)'")
            let listing = text[from.lowerBound...].components(separatedBy: "\n#").first ?? ""
            for product in products {
                #expect(listing.contains("`\(product)`"), "\(page) does not list the product \(product) where it lists the products")
            }
        }
    }

    @Test func commandLinesUseRealOptions() {
        var checked = 0
        for block in Self.blocks() where block.info != "swift" && block.info != "json" {
            for raw in block.lines {
                var line = raw.trimmingCharacters(in: .whitespaces)
                if line.hasPrefix("$ ") { line.removeFirst(2) }
                if let comment = line.range(of: "  #") ?? line.range(of: " # ") { line = String(line[..<comment.lowerBound]) }
                // A command starts the line, or a `run:` step, an `sh -c` string or a pipe stage.
                var start = line.hasPrefix("mp4probe ") ? line.range(of: "mp4probe ") : nil
                for lead in ["run: mp4probe ", "'mp4probe ", "\"mp4probe ", "| mp4probe "] where start == nil {
                    if let found = line.range(of: lead) { start = line.range(of: "mp4probe ", range: found.lowerBound..<line.endIndex) }
                }
                guard let start else { continue }
                var rest = String(line[start.upperBound...])
                if let subshell = rest.range(of: "$(") { rest = String(rest[..<subshell.lowerBound]) }
                let words = Self.words(rest)
                // Output lines ("mp4probe check: policy ...") and diagrams are not commands.
                guard let first = words.first, !first.hasPrefix("mp4probe"), !first.hasSuffix(":"), !first.hasPrefix("(") else { continue }
                let command = CommandTable.named(first)?.spec ?? (first.hasPrefix("-") || first.contains(".") || first.contains("/") || first == "FILE" ? InfoCommand.spec : nil)
                if ["help", "COMMAND"].contains(first) { continue }
                guard let spec = command else {
                    Issue.record("\(block.file):\(block.line): unknown command '\(first)' in `\(raw)`")
                    continue
                }
                let known = Set(spec.allOptions.map { "--" + $0.name } + ["--version"])
                for word in words where word.hasPrefix("--") {
                    let name = String(word.split(separator: "=").first ?? "").trimmingCharacters(in: CharacterSet(charactersIn: "[]|()'\""))
                    #expect(known.contains(name), "\(block.file):\(block.line): \(spec.name) has no option \(name) (`\(raw)`)")
                }
                checked += 1
            }
        }
        #expect(checked >= 30)
    }

    /// Shell-like words: spaces separate, single and double quotes group.
    static func words(_ text: String) -> [String] {
        var words: [String] = [], current = "", quote: Character?
        var inWord = false
        for character in text {
            if let q = quote {
                if character == q { quote = nil } else { current.append(character) }
            } else if character == "\"" || character == "'" {
                quote = character
                inWord = true
            } else if character == " " {
                if inWord { words.append(current); current = ""; inWord = false }
            } else {
                current.append(character)
                inWord = true
            }
        }
        if inWord { words.append(current) }
        return words
    }

    /// docs/json-schema.md lists every finding id of the catalogue, with its category.
    @Test func findingIdsAreDocumented() throws {
        let page = String(decoding: try #require(FileSystem.read(Fixtures.packageRoot + "/docs/json-schema.md")), as: UTF8.self)
        for kind in Finding.Kind.allCases {
            let row = page.split(separator: "\n").first { $0.hasPrefix("| `\(kind.category.rawValue)` |") }
            #expect(row?.contains("`\(kind.id)` (\(kind.defaultSeverity.rawValue.prefix(1)))") == true, "\(kind.rawValue) is not in the finding table of docs/json-schema.md under \(kind.category.rawValue)")
        }
    }
}
