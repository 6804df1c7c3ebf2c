import Testing
@testable import MP4Core

/// Policy files are strict: a typo or a bad value is an error with its line and column,
/// never a rule silently switched off (issue 13 item 6).
@Suite struct PolicyDocumentTests {
    static func parse(_ text: String) throws -> CheckPolicy { try CheckPolicy.parse(document: Array(text.utf8)) }

    static func error(_ text: String) -> CheckPolicy.DocumentError? {
        do {
            _ = try parse(text)
            return nil
        } catch let error as CheckPolicy.DocumentError {
            return error
        } catch {
            return nil
        }
    }

    @Test func validDocumentsSetEveryKey() throws {
        let policy = try Self.parse("""
        {
          "$schema": "https://example.com/policy.json",
          "requireFaststart": false, "maxStartupBytes": 1048576, "maxKeyframeInterval": 2.5,
          "maxInterleave": 1, "allowCodecs": ["avc1", "mp4a.40.2"], "allowBrands": ["isom"],
          "allowFragmented": false, "maxDuration": 600, "minResolution": "640x360",
          "maxResolution": "3840x2160"
        }
        """)
        #expect(policy == CheckPolicy(requireFaststart: false, maxStartupBytes: 1_048_576, maxKeyframeInterval: 2.5, maxInterleave: 1, allowCodecs: ["avc1", "mp4a.40.2"], allowBrands: ["isom"], allowFragmented: false, maxDuration: 600, minResolution: "640x360", maxResolution: "3840x2160"))
        #expect(try Self.parse("{}") == CheckPolicy())
        #expect(try Self.parse(#"{"maxDuration": null}"#) == CheckPolicy())
        #expect(try Self.parse("\u{FEFF}{\"maxDuration\": 1e2}").maxDuration == 100)
    }

    @Test func typosAndBadValuesAreErrorsWithPositions() {
        let typo = Self.error(#"{"maxKeyframeIntervall":0.5}"#)
        #expect(typo?.line == 1 && typo?.column == 2 && typo?.message.contains(#"did you mean "maxKeyframeInterval""#) == true, "\(String(describing: typo))")
        let negative = Self.error(#"{"maxKeyframeInterval":-1}"#)
        #expect(negative?.column == 24 && negative?.message.contains("0 or more") == true, "\(String(describing: negative))")
        let list = Self.error("{\n  \"allowCodecs\": [\"avc1\", 3]\n}")
        #expect(list?.line == 2 && list?.column == 27, "\(String(describing: list))")
        #expect(Self.error(#"{"maxStartupBytes": 1.5}"#) != nil)
        #expect(Self.error(#"{"maxStartupBytes": -1}"#) != nil)
        #expect(Self.error(#"{"minResolution": "big"}"#) != nil)
        #expect(Self.error(#"{"requireFaststart": "yes"}"#) != nil)
        #expect(Self.error(#"{"maxDuration": 1, "maxDuration": 2}"#)?.message.contains("twice") == true)
        #expect(Self.error("[1]")?.message.contains("JSON object") == true)
        #expect(Self.error("") != nil)
        #expect(Self.error(#"{"maxDuration": 1"#)?.message.contains("missing '}'") == true)
        #expect(Self.error(#"{"maxDuration": 1} x"#) != nil)
        #expect(Self.error(#"{"maxDuration": 1e999}"#) != nil)
        #expect(Self.error("{\"allowBrands\": [\"is\nom\"]}") != nil)
    }

    @Test func hostileDocumentsAreBounded() {
        let deep = String(repeating: "[", count: 100_000)
        #expect(Self.error(deep)?.message.contains("nested deeper") == true)
        #expect(Self.error("{\"allowBrands\": [" + String(repeating: "\"x\",", count: 300_000) + "\"x\"]}")?.message.contains("1 MiB") == true)
    }
}
