import Foundation

/// Headless Chromium for page tests: the DOM after a page's scripts ran, and screenshots.
/// Each run has a profile of its own and no background networking, and is killed after 90 s.
public enum HeadlessChromium {
    static func arguments(profile: String) -> [String] {
        ["--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking", "--disable-component-update",
         "--disable-sync", "--disable-default-apps", "--hide-scrollbars", "--mute-audio", "--user-data-dir=" + profile]
    }

    /// The serialized DOM of `url` once loaded, after `virtualTime` ms of virtual time (timers
    /// run: a live page polls), or "" when Chromium is missing or fails.
    public static func dumpDOM(_ url: String, profile: String, virtualTime: Int? = nil) async -> String {
        guard let chromium = Executables.chromium, let timeout = Executables.find("timeout") else { return "" }
        var arguments = ["90", chromium] + Self.arguments(profile: profile)
        if let virtualTime { arguments.append("--virtual-time-budget=\(virtualTime)") }
        return await Executables.runOffPool(timeout, arguments + ["--dump-dom", url])
    }

    /// Takes a screenshot of `url` (`width` x `height`) to `path`; whether it was written.
    public static func screenshot(_ url: String, to path: String, profile: String, width: Int = 1200, height: Int = 1600, virtualTime: Int? = nil) async -> Bool {
        guard let chromium = Executables.chromium, let timeout = Executables.find("timeout") else { return false }
        try? FileManager.default.removeItem(atPath: path)
        var arguments = ["90", chromium] + Self.arguments(profile: profile) + ["--window-size=\(width),\(height)", "--screenshot=" + path]
        if let virtualTime { arguments.append("--virtual-time-budget=\(virtualTime)") }
        _ = await Executables.runOffPool(timeout, arguments + [url])
        return FileManager.default.fileExists(atPath: path)
    }

    /// Runs Chromium on the local file `page` with `?src=` `src` (percent-encoded), playing
    /// without a gesture, and returns the console lines holding `marker`, once `done` says so
    /// of the lines so far or `seconds` have passed; `at` runs an action once, that many
    /// milliseconds after the start (off the thread that collects the lines).
    public static func consoleLines(page: String, src: String, profile: String, marker: String = "MP4PROBE ", seconds: Double,
                                    at: (ms: Int, action: @Sendable () -> Void)? = nil,
                                    until done: @escaping @Sendable ([String]) -> Bool = { _ in false }) async -> [String] {
        await Executables.offPool {
            guard let chromium = Executables.chromium else { return [] }
            var allowed = CharacterSet.alphanumerics
            allowed.insert(charactersIn: "-._~")
            let process = Process()
            process.executableURL = URL(fileURLWithPath: chromium)
            process.arguments = ["--headless=new", "--no-sandbox", "--disable-gpu", "--enable-logging=stderr", "--v=0",
                                 "--autoplay-policy=no-user-gesture-required", "--no-first-run", "--user-data-dir=" + profile,
                                 "file://" + page + "?src=" + (src.addingPercentEncoding(withAllowedCharacters: allowed) ?? src)]
            let pipe = Pipe()
            process.standardError = pipe
            process.standardOutput = FileHandle.nullDevice
            guard (try? process.run()) != nil else { return [] }
            let lines = ConsoleLines()
            Thread {
                var pending = Data()
                while true {
                    let chunk = pipe.fileHandleForReading.availableData
                    if chunk.isEmpty { return }
                    pending += chunk
                    while let newline = pending.firstIndex(of: 10) {
                        let line = String(decoding: pending[pending.startIndex..<newline], as: UTF8.self)
                        pending = Data(pending[(newline + 1)...])
                        if line.contains(marker) { lines.append(line) }
                    }
                }
            }.start()
            if let at {
                Thread {
                    usleep(UInt32(at.ms) * 1000)
                    at.action()
                }.start()
            }
            let deadline = Date().addingTimeInterval(seconds)
            while Date() < deadline && !done(lines.all) { usleep(50_000) }
            process.terminate()
            process.waitUntilExit()
            return lines.all
        }
    }

    /// Lines collected on one thread and read on another.
    final class ConsoleLines: @unchecked Sendable {
        private let lock = NSLock()
        private var lines: [String] = []
        func append(_ line: String) { lock.withLock { lines.append(line) } }
        var all: [String] { lock.withLock { lines } }
    }

    /// Where tests leave their screenshots for a person to look at: `$MP4PROBE_SCREENSHOTS`,
    /// else `$TMPDIR/mp4probe-screenshots` (created).
    public static var screenshotDirectory: String {
        let directory = ProcessInfo.processInfo.environment["MP4PROBE_SCREENSHOTS"] ?? (NSTemporaryDirectory() as NSString).appendingPathComponent("mp4probe-screenshots")
        try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        return directory
    }

    /// The text a person sees in `dom`: scripts, styles and the title dropped, tags as spaces,
    /// entities decoded, runs of white space as one space.
    public static func visibleText(_ dom: String) -> String {
        var text = dom
        for pattern in ["<script[\\s\\S]*?</script>", "<style[\\s\\S]*?</style>", "<title>[\\s\\S]*?</title>", "<[^>]+>"] {
            text = text.replacingOccurrences(of: pattern, with: " ", options: .regularExpression)
        }
        for (entity, character) in [("&lt;", "<"), ("&gt;", ">"), ("&quot;", "\""), ("&#39;", "'"), ("&nbsp;", " "), ("&amp;", "&")] {
            text = text.replacingOccurrences(of: entity, with: character)
        }
        return text.replacingOccurrences(of: "\\s+", with: " ", options: .regularExpression)
    }

    /// The value of `data-NAME` on `<body>` in `dom`, if set.
    public static func bodyData(_ name: String, in dom: String) -> String? {
        guard let body = dom.range(of: "<body[^>]*>", options: .regularExpression) else { return nil }
        let tag = String(dom[body])
        guard let attribute = tag.range(of: "data-\(name)=\"[^\"]*\"", options: .regularExpression) else { return nil }
        return String(tag[attribute].dropFirst("data-\(name)=\"".count).dropLast())
    }
}
