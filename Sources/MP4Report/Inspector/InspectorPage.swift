import MP4Core

/// The inspector page: one self-contained HTML file (inline CSS and JavaScript written here,
/// the file's facts embedded as JSON) that draws a file's layout, tracks, interleaving, seek
/// plans and box tree. It loads nothing from the network: its Content-Security-Policy allows no
/// source but itself, and a live page (``InspectorData/Live``) only its own server's status and
/// video URLs.
public enum InspectorPage {
    /// The page for `data`.
    /// The live page `serve` answers at `_/inspect?url=` (`CachingProxy.Options.inspectorPage`):
    /// `file` read from `source`, its cached ranges, the paths of its status and video.
    public static func live(_ file: MP4File, _ source: any ByteSource, _ cachedRanges: [Range<UInt64>]?, _ statusPath: String, _ videoPath: String) async -> String {
        html(await InspectorData.gather(file, from: source, cachedRanges: cachedRanges, live: InspectorData.Live(statusURL: statusPath, videoURL: videoPath)))
    }

    public static func html(_ data: InspectorData) -> String {
        // A live page talks to the server that sent it; a file page to nothing at all.
        let connect = data.live == nil ? "'none'" : "'self'"
        let policy = "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:; media-src \(connect); connect-src \(connect)"
        var page = """
        <!DOCTYPE html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <meta http-equiv="Content-Security-Policy" content="\(policy)">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <meta name="generator" content="mp4probe \(MP4ProbeVersion.string)">
        <title>\(escape(InspectorData.cut(data.file.name))) — mp4probe inspect</title>
        <style>
        """
        page += InspectorStyle.css
        page += """
        </style>
        </head>
        <body>
        <main id="app"><noscript>This page draws its views with JavaScript; the facts are in the JSON below.</noscript></main>
        <script type="application/json" id="facts">
        """
        page += data.json()
        page += "</script>\n<script>\n"
        page += InspectorScript.javaScript
        page += "\n</script>\n</body>\n</html>\n"
        return page
    }

    /// `text` for HTML text and attribute values.
    static func escape(_ text: String) -> String {
        var out = ""
        for character in text {
            switch character {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&#39;"
            default: out.append(character)
            }
        }
        return out
    }
}
