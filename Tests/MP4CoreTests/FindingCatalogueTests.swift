import Testing
@testable import MP4Core

/// The finding catalogue: one id per condition, every id kebab-case and unique, a category
/// for each, and no core message that names a command-line tool.
@Suite struct FindingCatalogueTests {
    @Test func idsAreStableKebabCaseAndUnique() {
        let ids = Finding.Kind.allCases.map(\.id)
        #expect(Set(ids).count == ids.count)
        for id in ids {
            #expect(id.allSatisfy { $0.isLowercase || $0.isNumber || $0 == "-" } && !id.hasPrefix("-") && !id.hasSuffix("-"), "\(id)")
        }
        // The two names of one condition were merged.
        #expect(Finding.Kind(id: "truncated-box") == nil && Finding.Kind(id: "box-truncated") != nil)
        #expect(Finding.Kind.allCases.count >= 60)
    }

    @Test func defaultsAndCategories() {
        #expect(Finding.Kind.notFaststart.defaultSeverity == .warning && Finding.Kind.notFaststart.category == .layout)
        #expect(Finding(.notFaststart, message: "m").severity == .warning)
        #expect(Finding(.notFaststart, severity: .error, message: "m").severity == .error)
        #expect(Finding(.boxOverrunsParent, message: "m").id == "box-overruns-parent")
        #expect(Finding(id: "box-overruns-parent", severity: .error, message: "m").kind == .boxOverrunsParent)
        #expect(Finding.Category.allCases.allSatisfy { category in Finding.Kind.allCases.contains { $0.category == category } })
    }
}
