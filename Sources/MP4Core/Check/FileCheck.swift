/// The result of checking one file against a ``CheckPolicy``: the verdict, the measured facts,
/// and findings with stable ids, each saying what is wrong and what to do.
public struct FileCheck: Sendable {
    /// The verdict.
    public enum Status: String, Sendable, Hashable, Codable {
        /// Every rule holds.
        case pass
        /// A rule fails (a finding of severity `error`).
        case fail
        /// The file could not be read at all (I/O).
        case ioError = "io-error"
    }

    /// Facts measured while checking (`nil` when not applicable).
    public struct Metrics: Sendable, Hashable, Codable {
        public var fileSize: UInt64?
        public var kind: String?
        public var majorBrand: String?
        public var faststart: Bool?
        public var startupBytes: UInt64?
        public var durationSeconds: Double?
        public var codecs: [String] = []
        public var width: Int?
        public var height: Int?
        /// Longest gap between sync samples of a video track, seconds.
        public var maxKeyframeInterval: Double?
        /// Most seconds one track runs ahead of another in file order.
        public var interleaveSeconds: Double?
        /// Most bytes of other data between two consecutive chunks of one track.
        public var interleaveBytes: UInt64?
        /// Samples whose byte ranges were checked against the `mdat` payloads.
        public var samplesChecked: Int = 0

        public init() {}
    }

    /// Finding ids that only a rewrite of the layout fixes (`mp4probe check --fix`).
    public static let layoutFindingIDs: Set<String> = ["not-faststart", "startup-bytes"]

    public var name: String
    public var status: Status
    public var findings: [Finding]
    public var metrics: Metrics

    /// Creates a result.
    public init(name: String, status: Status, findings: [Finding], metrics: Metrics) {
        self.name = name
        self.status = status
        self.findings = findings
        self.metrics = metrics
    }

    /// Whether every failing finding is one a faststart rewrite fixes.
    public var failsOnlyOnLayout: Bool {
        status == .fail && findings.filter { $0.severity == .error }.allSatisfy { Self.layoutFindingIDs.contains($0.id) }
    }

    /// Checks the file behind `source`: opens it (headers and `moov` only), then evaluates.
    /// Never throws: an unreadable file is a result with status `io-error`, a file that is not
    /// MP4 or is broken a `fail` with an integrity finding.
    public static func check(_ source: some ByteSource, policy: CheckPolicy = CheckPolicy(), limits: ParseLimits = .default) async -> FileCheck {
        do {
            let file = try await MP4File.open(source, options: MP4File.Options(limits: limits, facts: .structure))
            // Fragments are headers too: their runs must point into mdat like chunks do.
            var fragments: Result<FragmentIndex, MP4Error>?
            if file.isFragmented || file.kind == .mediaSegment {
                do {
                    fragments = .success(try await FragmentIndex.load(file, from: source, limits: limits))
                } catch let error as MP4Error {
                    if error.kind == .io { throw error }
                    fragments = .failure(error)
                }
            }
            return evaluate(file, policy: policy, limits: limits, fragments: fragments)
        } catch let error as MP4Error {
            if error.kind == .io {
                return FileCheck(name: source.name, status: .ioError, findings: [Finding(.ioError, message: error.message, offset: error.offset)], metrics: Metrics())
            }
            let kind: Finding.Kind = error.kind == .notMP4 ? .notMP4 : (error.kind == .limitExceeded ? .limitExceeded : .unreadable)
            return FileCheck(name: source.name, status: .fail, findings: [Finding(kind, message: "\(error.message); the file cannot be played as MP4", offset: error.offset)], metrics: Metrics())
        } catch {
            return FileCheck(name: source.name, status: .ioError, findings: [Finding(.ioError, message: "\(error)")], metrics: Metrics())
        }
    }

    /// Evaluates an opened file against `policy`.
    /// `fragments` are the loaded movie fragments of a fragmented file or media segment (or
    /// why they could not be loaded); their runs are checked like chunks.
    public static func evaluate(_ file: MP4File, policy: CheckPolicy, limits: ParseLimits = .default, fragments: Result<FragmentIndex, MP4Error>? = nil) -> FileCheck {
        var findings: [Finding] = []
        var metrics = Metrics()
        let layout = file.layout
        metrics.fileSize = layout.fileSize
        metrics.kind = file.kind.rawValue
        metrics.majorBrand = file.fileType?.majorBrand.description
        metrics.durationSeconds = file.movie?.durationSeconds.flatMap { $0 > 0 ? $0 : nil }
        let isFragmented = file.isFragmented

        // Structural integrity, always: parse errors, truncation.
        for finding in file.findings where finding.severity == .error {
            findings.append(finding)
        }
        for box in layout.boxes where box.isTruncated && !findings.contains(where: { $0.offset == box.offset }) {
            findings.append(Finding(.boxTruncated, message: "'\(box.type)' claims \(box.size) bytes but the file ends after \(box.availableSize): the file is incomplete; upload it again", offset: box.offset, path: .top(box.type)))
        }
        // The spec's "shall"s, when asked for: each an error.
        if policy.conformance {
            for finding in Conformance.findings(file) {
                var raised = finding
                raised.severity = .error
                findings.append(raised)
            }
        }
        if file.movie == nil && file.kind != .mediaSegment {
            findings.append(Finding(.noMoov, message: "the file has no moov box: nothing can play it"))
        }

        // Layout.
        if !isFragmented, layout.movieBox != nil {
            metrics.faststart = layout.moviePlacement != .afterMediaData
            metrics.startupBytes = layout.startupByteCount
            if layout.moviePlacement == .afterMediaData, let moov = layout.movieBox, let mdat = layout.firstMediaDataBox {
                // Required: an error; otherwise still said, as the warning it is in `info`.
                findings.append(Finding(.notFaststart, severity: policy.requireFaststart ? .error : .warning, message: "moov at \(moov.offset) comes after mdat at \(mdat.offset): a progressive player must download \(moov.availableEnd) of \(layout.fileSize) bytes before playback; move moov to the front (a faststart rewrite, no re-encoding)", offset: moov.offset, path: .top(.moov)))
            }
            if let limit = policy.maxStartupBytes, let startup = layout.startupByteCount, startup > limit {
                findings.append(Finding(.startupBytes, message: "a progressive player needs \(startup) bytes before playback, more than the \(limit) allowed; move moov to the front (a faststart rewrite, no re-encoding)", path: .top(.moov)))
            }
        }
        // Movie fragments its moov does not declare (no mvex): players read a film of no samples
        // or fail (ffmpeg does); `info` reads it as progressive and ignores them.
        if !isFragmented, file.movie != nil, case let moofs = layout.boxes.filter({ $0.type == .moof }).count, moofs > 0 {
            findings.append(Finding(.fragmentsUndeclared, message: "the file has \(moofs) moof box(es), but its moov declares no movie fragments (no mvex): players see no samples in them or fail; remux it (e.g. `ffmpeg -i IN -c copy -movflags +frag_keyframe OUT`)", path: .top(.moov)))
        }
        if isFragmented && !policy.allowFragmented {
            findings.append(Finding(.fragmented, message: "the file is fragmented (\(file.kind.rawValue)), which this policy does not allow; remux it as a progressive file (e.g. `ffmpeg -i IN -c copy -movflags +faststart OUT`)"))
        }

        // Codecs, brands, duration, resolution.
        for track in file.movie?.tracks ?? [] where track.kind == .video || track.kind == .audio {
            for entry in track.sampleEntries {
                let codec = entry.codecString
                if !metrics.codecs.contains(codec) { metrics.codecs.append(codec) }
                if let allowed = policy.allowCodecs, !allowed.contains(where: { entry.format.description == $0 || entry.codingFormat.description == $0 || codec.hasPrefix($0) }) {
                    findings.append(Finding(.codecNotAllowed, message: "track \(track.trackID) uses \(codec) (\(entry.format)), not among the allowed codecs \(allowed.joined(separator: ", ")); re-encode it", path: track.path))
                }
            }
            if track.kind == .video, let entry = track.sampleEntries.first, let w = entry.width, let h = entry.height, metrics.width == nil {
                metrics.width = Int(w)
                metrics.height = Int(h)
            }
        }
        if let allowed = policy.allowBrands, let brand = metrics.majorBrand, !allowed.contains(brand) {
            findings.append(Finding(.brandNotAllowed, message: "major brand '\(brand)' is not among the allowed brands \(allowed.joined(separator: ", "))", path: .top(.ftyp)))
        }
        if let width = metrics.width, let height = metrics.height {
            if let text = policy.minResolution, let min = CheckPolicy.parseResolution(text), width < min.width || height < min.height {
                findings.append(Finding(.resolution, message: "the video is \(width)x\(height), smaller than the minimum \(text)"))
            }
            if let text = policy.maxResolution, let max = CheckPolicy.parseResolution(text), width > max.width || height > max.height {
                findings.append(Finding(.resolution, message: "the video is \(width)x\(height), larger than the maximum \(text)"))
            }
        }

        // What upload platforms ingest (the policy's ingest keys).
        var fragmentTables: [UInt32: SampleTable]?
        if case .success(let index)? = fragments { fragmentTables = index.tables }
        IngestRules.apply(file, policy: policy, fragmentTables: fragmentTables, to: &findings)

        // Fragment integrity: the moofs parse, and every run points into an mdat payload.
        switch fragments {
        case .failure(let error)?:
            findings.append(Finding(.fragmentsUnreadable, message: "the movie fragments cannot be read: \(error.message)", offset: error.offset))
        case .success(let index)?:
            for finding in index.findings where finding.severity != .info {
                var raised = finding
                // A fragment of a track mvex has no defaults for (no trex): ffmpeg fails on it.
                if finding.id == "trun-past-end" || finding.id == "missing-trex" || finding.severity == .error { raised.severity = .error }
                findings.append(raised)
            }
            let payloads = SampleLayoutAnalysis.payloads(layout)
            for (trackID, table) in index.tables.sorted(by: { $0.key < $1.key }) {
                metrics.samplesChecked += table.sampleCount
                if let outside = SampleLayoutAnalysis.firstOutsideMediaData(table, trackID: trackID, layout: layout, payloads: payloads, path: nil) { findings.append(outside) }
            }
        case nil:
            break
        }

        // Sample-level checks: on progressive files counts and byte ranges too; on fragmented
        // files (their fragments loaded) the same keyframe, interleave and duration rules.
        var planner: SeekPlanner?
        if !isFragmented, file.movie != nil {
            planner = SeekPlanner(file: file, limits: limits)
        } else if case .success(let index)? = fragments, file.movie != nil {
            let fragmentPlanner = SeekPlanner(file: file, fragments: index, limits: limits)
            planner = fragmentPlanner
            // The fragments' span, as `info` measures it (not every sample's size and flags).
            if metrics.durationSeconds == nil {
                metrics.durationSeconds = fragmentPlanner.tracks.compactMap(\.presentationSpan).max()
            }
        }
        if let planner, isFragmented {
            let analysis = SampleLayoutAnalysis(planner: planner, layout: layout, limits: limits)
            metrics.maxKeyframeInterval = analysis.maxKeyframeInterval
            metrics.interleaveSeconds = analysis.interleaveSeconds
            metrics.interleaveBytes = analysis.interleaveBytes
            Self.applyTimingRules(analysis, policy: policy, fragmented: true, to: &findings)
        }
        if let limit = policy.maxDuration, let duration = metrics.durationSeconds, duration > limit {
            findings.append(Finding(.duration, message: "the file lasts \(duration) s, more than the \(limit) s allowed"))
        }
        if let planner, !isFragmented {
            // Sample tables that disagree fail the check: the policy raises their severity. A
            // condition already reported when the file was opened is raised, not repeated.
            let failing: Set<Finding.Kind> = [.sampleCountMismatch, .samplesWithoutChunk, .stscPastChunks, .missingSampleSizes, .missingChunkOffsets, .missingStts, .missingStsc]
            for finding in planner.findings {
                guard let kind = finding.kind, failing.contains(kind) else { continue }
                let suffix = "; the tables disagree, so players may stop early or fail"
                if let index = findings.firstIndex(where: { $0.id == finding.id && $0.path == finding.path }) {
                    findings[index].severity = .error
                    if !findings[index].message.hasSuffix(suffix) { findings[index].message += suffix }
                } else {
                    var raised = finding
                    raised.severity = .error
                    raised.message += suffix
                    findings.append(raised)
                }
            }
            // What the tables say is wrong short of disagreeing. An stsc that does not start at
            // chunk 1 or go up misplaces samples (ffmpeg logged 407 decode errors): an error. An
            // stss out of order (a warning) and chunks no sample fills (a note) break 14496-12's
            // "shall" (8.6.2, 8.7.4, 8.7.5): errors under --conformance.
            for finding in planner.findings {
                guard let kind = finding.kind, [.badStscEntry, .unsortedStss, .unusedChunks].contains(kind),
                      !findings.contains(where: { $0.id == finding.id && $0.path == finding.path }) else { continue }
                var shown = finding
                if kind == .badStscEntry || policy.conformance { shown.severity = .error }
                findings.append(shown)
            }
            let analysis = SampleLayoutAnalysis(planner: planner, layout: layout, limits: limits)
            metrics.samplesChecked = analysis.samplesChecked
            findings += analysis.findings
            metrics.maxKeyframeInterval = analysis.maxKeyframeInterval
            metrics.interleaveSeconds = analysis.interleaveSeconds
            metrics.interleaveBytes = analysis.interleaveBytes
            Self.applyTimingRules(analysis, policy: policy, fragmented: false, to: &findings)
        }
        let failed = findings.contains { $0.severity == .error }
        return FileCheck(name: file.name, status: failed ? .fail : .pass, findings: findings, metrics: metrics)
    }

    /// The keyframe-interval and interleave rules over an analysis.
    static func applyTimingRules(_ analysis: SampleLayoutAnalysis, policy: CheckPolicy, fragmented: Bool, to findings: inout [Finding]) {
        if let limit = policy.maxKeyframeInterval, let interval = analysis.maxKeyframeInterval, interval > limit {
            findings.append(Finding(.keyframeInterval, message: "keyframes are up to \(Self.rounded(interval)) s apart (from \(Self.rounded(analysis.maxKeyframeIntervalStart ?? 0)) s), more than the \(limit) s allowed: seeking lands far from the requested time; re-encode with a shorter GOP (e.g. ffmpeg -g <2 x fps>)"))
        }
        if let limit = policy.maxInterleave, let seconds = analysis.interleaveSeconds, seconds > limit {
            findings.append(Finding(.interleave, message: "in file order one track runs up to \(Self.rounded(seconds)) s (\(analysis.interleaveBytes ?? 0) bytes) ahead of another, more than the \(limit) s allowed: a progressive player must buffer that much; " + (fragmented ? "remux with shorter fragments that hold every track (e.g. `ffmpeg -i IN -c copy -movflags +frag_keyframe+empty_moov -frag_duration 500000 OUT`)" : "remux with interleaving (e.g. `ffmpeg -i IN -c copy -movflags +faststart OUT`)")))
        }
    }

    static func rounded(_ value: Double) -> Double { (value * 1000).rounded() / 1000 }
}
