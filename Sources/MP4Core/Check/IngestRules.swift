/// The rules upload platforms publish for what they ingest, read from the boxes and sample
/// tables (no media byte): bit depth, chroma, interlacing, frame rate and its constancy,
/// B-frame runs, closed GOPs, edit lists, video bit rate on average and over a GOP, file size,
/// audio channels and sample rates (``CheckPolicy``'s ingest keys). Each finding says the value
/// found and the limit. Decided here, without I/O.
enum IngestRules {
    /// Appends a finding for each rule `policy` sets that `file` breaks. `fragmentTables`: the
    /// sample tables of a fragmented file's tracks by track ID, when its fragments were read.
    static func apply(_ file: MP4File, policy: CheckPolicy, fragmentTables: [UInt32: SampleTable]?, to findings: inout [Finding]) {
        if let limit = policy.maxFileSize, file.layout.fileSize > limit {
            findings.append(Finding(.fileSize, message: "the file is \(file.layout.fileSize) bytes, more than the \(limit) allowed"))
        }
        for track in file.movie?.tracks ?? [] {
            if let codecs = policy.fragmentedCodecs, !file.isFragmented, let entry = track.sampleEntries.first,
               codecs.contains(where: { entry.format.description == $0 || entry.codingFormat.description == $0 || entry.codecString.hasPrefix($0) }) {
                findings.append(Finding(.notFragmented, message: "track \(track.trackID) is \(entry.codecString), which the policy requires in a fragmented file; remux it fragmented (ffmpeg -c copy -movflags +frag_keyframe+empty_moov+default_base_moof, or -f hls -hls_segment_type fmp4)", path: track.path))
            }
            switch track.kind {
            case .video: video(track, policy: policy, table: fragmentTables?[track.trackID], to: &findings)
            case .audio: audio(track, policy: policy, to: &findings)
            default: break
            }
            if let allowed = policy.editLists, allowed != "any", let list = track.editList, list.shape != .none,
               allowed == "none" || list.shape == .complex {
                findings.append(Finding(.editList, message: "track \(track.trackID) has an edit list (\(list.shape.rawValue), \(list.entries.count) entr\(list.entries.count == 1 ? "y" : "ies")); the policy allows \(allowed == "none" ? "none" : "only an offset"); remux without it (ffmpeg -c copy -use_editlist 0 after trimming at a keyframe)", path: track.path))
            }
        }
    }

    private static func video(_ track: Track, policy: CheckPolicy, table: SampleTable?, to findings: inout [Finding]) {
        let name = "track \(track.trackID)"
        if let caps = policy.maxLevel, let codec = track.codecLevel, let cap = caps[codec.family], codec.level > cap + 1e-9 {
            findings.append(Finding(.level, message: "\(name) is \(codec.family.uppercased()) level \(codec.level); the policy allows at most \(cap)", path: track.path))
        }
        if !policy.allowRotation, let header = track.header, header.rotationDegrees != 0 {
            let turn = header.rotationDegrees.map { "turned \($0)° by its track header" } ?? "transformed by its track header's matrix (not a plain rotation)"
            findings.append(Finding(.rotated, message: "\(name) is \(turn); players that ignore the matrix show it sideways: rotate the pixels (ffmpeg re-encodes with the rotation applied by default)", path: track.path))
        }
        if let format = track.pictureFormat {
            let family = track.codingFamily
            if let limit = family.flatMap({ policy.maxBitDepthByFamily?[$0] }) ?? policy.maxBitDepth, Int(format.bitDepth) > limit {
                findings.append(Finding(.bitDepth, message: "\(name) is \(format.bitDepth)-bit video; the policy allows at most \(limit)-bit\(policy.maxBitDepthByFamily?[family ?? ""] != nil ? " for \(family ?? "")" : "")", path: track.path))
            }
            if let allowed = policy.allowChroma, !allowed.contains(format.chroma.rawValue) {
                findings.append(Finding(.chromaNotAllowed, message: "\(name) is \(format.chroma.rawValue) video; the policy allows \(allowed.joined(separator: ", "))", path: track.path))
            }
            if !policy.allowInterlaced, format.interlaced == true {
                findings.append(Finding(.interlaced, message: "\(name) is interlaced (it may code fields); the policy allows progressive video only: de-interlace it", path: track.path))
            }
        }
        let frames = track.frameStructure() ?? table.flatMap { table in track.timescale.flatMap { FrameStructure.measure(table, timescale: $0) } }
        if let frames {
            if let limit = policy.maxFrameRate, let rate = frames.framesPerSecond, rate > limit * 1.001 {
                findings.append(Finding(.frameRate, message: "\(name) runs at \(format(rate)) frames per second, more than the \(format(limit)) allowed", path: track.path))
            }
            if policy.requireConstantFrameRate, !frames.constantFrameRate {
                findings.append(Finding(.variableFrameRate, message: "\(name) has a variable frame rate; the policy requires a constant one", path: track.path))
            }
            if let limit = policy.maxConsecutiveBFrames, frames.maxConsecutiveBFrames > limit {
                findings.append(Finding(.bFrames, message: "\(name) has \(frames.maxConsecutiveBFrames) B-frames in a row, more than the \(limit) allowed (x264/x265: -bf \(limit))", path: track.path))
            }
            if policy.requireClosedGOP, frames.openGOP {
                findings.append(Finding(.openGOP, message: "\(name) has open GOPs (frames after a keyframe shown before it); the policy requires closed GOPs (x265: no-open-gop=1)", path: track.path))
            }
            if let limit = policy.maxGOPBitRate, let peak = frames.peakGOPBitRate, peak > limit {
                findings.append(Finding(.gopBitRate, message: "\(name) peaks at \(peak) bits per second over a GOP, more than the \(limit) allowed", path: track.path))
            }
        }
        if let allowed = policy.allowHDR, let hdr = track.sampleEntries.first?.hdr, !allowed.contains(hdr) {
            let hint = hdr == "PQ" ? " (PQ without mastering display metadata: an 'mdcv' box)" : ""
            findings.append(Finding(.hdrNotAllowed, message: "\(name) is \(hdr) video\(hint); the policy allows \(allowed.joined(separator: ", ")) (and SDR)", path: track.path))
        }
        if let limit = policy.maxVideoBitRate, let rate = track.bitRate, rate > limit {
            findings.append(Finding(.videoBitRate, message: "\(name) averages \(rate) bits per second, more than the \(limit) allowed", path: track.path))
        }
    }

    private static func audio(_ track: Track, policy: CheckPolicy, to findings: inout [Finding]) {
        guard let entry = track.sampleEntries.first else { return }
        if let allowed = policy.allowAudioChannels, let channels = entry.effectiveChannelCount, !allowed.contains(Int(channels)) {
            findings.append(Finding(.audioChannels, message: "track \(track.trackID) has \(channels) audio channels; the policy allows \(allowed.map(String.init).joined(separator: ", "))", path: track.path))
        }
        if let allowed = policy.allowAudioSampleRates, let rate = entry.effectiveSampleRate, !allowed.contains(Int(rate.rounded())) {
            findings.append(Finding(.audioSampleRate, message: "track \(track.trackID) is sampled at \(Int(rate.rounded())) Hz; the policy allows \(allowed.map(String.init).joined(separator: ", ")) Hz", path: track.path))
        }
    }

    private static func format(_ value: Double) -> String {
        value == value.rounded() ? String(Int(value)) : String((value * 1000).rounded() / 1000)
    }
}
