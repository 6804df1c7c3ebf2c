/// Help texts (kept in step with `docs/cli.md`).
enum Help {
    static let exitCodes = """
    Exit codes:
      0   success
      1   mp4probe check: a file failed a rule
      2   usage error (unknown command or option, bad argument)
      3   invalid input (not MP4/QuickTime, or broken beyond reading)
      4   I/O error (missing file, permission, read failure)
      5   resource limit reached (e.g. moov larger than --max-moov-size)
      6   faststart refused a file it cannot rewrite safely (nothing written)
      70  internal error

    """

    static let general = """
    mp4probe \(MP4Probe.version): layout, tracks and boxes of MP4 / QuickTime / fragmented MP4 files,
    read from box headers and moov only (the media data is never read).

    Usage:
      mp4probe FILE                 summary (same as 'mp4probe info FILE')
      mp4probe info FILE [--json]   summary: brands, duration, tracks, codecs, faststart verdict, findings
      mp4probe boxes FILE [--json] [--full] [--depth N]
                                    box tree with offsets, sizes, version/flags and key fields
      mp4probe samples FILE [--track N] [--json]
                                    every sample: dts, pts, duration, offset, size, sync, chunk
      mp4probe seek FILE TIME [--duration D] [--align previous|next|exact] [--json]
                                    keyframe and byte ranges a player needs from TIME
      mp4probe faststart IN OUT [--verify] [--dry-run] | faststart --in-place FILE
                                    move moov in front of the media (safe, atomic)
      mp4probe check [OPTIONS] PATH|DIR|- ...
                                    CI gate: faststart, integrity, keyframes, interleaving, codecs
      mp4probe fetch URL --cache DIR [--time T [--duration D] | --all]
                                    fill an on-disk cache for a seek (or completely)
      mp4probe cache ls|stat|evict|export DIR ...
                                    manage a cache directory
      mp4probe help COMMAND         help for one command
      mp4probe --version

    FILE may be an http:// or https:// URL for info, boxes, samples, seek and check
    (--header "Name: value"; --secret-header "Name: value" for a credential that must not follow
    a redirect to another origin, as Authorization and Cookie never do; --timeout S; --stats
    prints the requests made and bytes received);
    with --cache DIR they read through an on-disk cache (docs/cache.md).

    \(exitCodes)
    """

    static let info = """
    Usage: mp4probe [info] FILE [--json [--compact]] [--max-moov-size SIZE]

    Summarises FILE: brands, duration and bit rate, the file kind (progressive, fragmented,
    init or media segment, header only), the faststart verdict (is moov before the first mdat,
    and how many bytes a progressive player needs before it can start), one line per track
    (id, kind, codec and RFC 6381 codec string, resolution or sample rate and channels,
    timescale, duration, samples, language, bit rate, edit list) and findings.

    Options:
      --json               machine-readable report (schema: docs/json-schema.md)
      --compact            with --json: one line instead of indented output
      --max-moov-size SIZE refuse a moov larger than SIZE (default 256M; suffixes K, M, G)
      -h, --help           this help

    \(exitCodes)
    """

    static let samples = """
    Usage: mp4probe samples FILE [--track N] [--range FIRST-LAST] [--limit N] [--json [--compact]]

    Lists every sample of every track (or of track N) in decode order, from the sample tables:
    index, dts and pts in media time-scale units (before the edit list), duration, byte offset,
    size, sync flag (K), chunk index, and the presentation time in seconds after the edit list.
    These are the facts of `ffprobe -show_packets`; ffprobe's timestamps equal ours plus the
    track's `ffprobeShift` (the first edit's delay minus its media_time). Fragmented files are
    listed from their moof/trun boxes. --range selects sample indexes (inclusive, 100- to the
    end), --limit at most N per track. Output is streamed; more than 50,000,000 samples without
    --range or --limit is refused (exit 5).

    \(exitCodes)
    """

    static let seek = """
    Usage: mp4probe seek FILE TIME [--duration D] [--align previous|next|exact] [--json [--compact]]

    Maps TIME (seconds, or hh:mm:ss.mmm) to what a player needs to show FILE from TIME to
    TIME+D: the sync sample to decode from (on the video track, else the main audio track) and
    its presentation time; per track the first and last sample needed; where reading must start
    and end; and the merged [start, end) byte ranges holding exactly those samples.
    Edit lists and composition offsets are applied. In a fragmented file with sidx or mfra only
    the fragments around TIME are read (see docs/seeking.md).

    Options:
      --duration D     window length (default 0: just the frame at TIME)
      --align MODE     previous (default): last sync sample at or before TIME; next: first at or
                       after; exact: the sample shown at TIME, no sync alignment
      --json           machine-readable plan (keyframeTime, startOffset, endOffset, ranges, tracks)

    \(exitCodes)
    """

    static let faststart = """
    Usage: mp4probe faststart IN OUT [options]
           mp4probe faststart --in-place FILE [options]
           mp4probe faststart --dry-run IN [--json]

    Moves moov in front of the media so that progressive players can start before the whole
    file has arrived. Every chunk offset is relocated (stco is promoted to co64 when an offset
    passes 4 GiB; saio and iloc offsets are relocated too); every other box is copied byte for
    byte, with the kernel's copy primitive. The output is written to a temporary file beside
    OUT, flushed to disk and renamed into place: on any error nothing appears at OUT and IN is
    unchanged. A file that is already faststart, or fragmented, is copied unchanged to OUT
    (left alone with --in-place). Files that cannot be rewritten safely (cmov, offsets outside
    every box, a truncated input, a top-level meta) are refused with exit code 6.

    Options:
      --in-place        rewrite FILE itself (same temp-and-rename safety, permissions kept)
      --dry-run         print the plan (new layout, offsets relocated, co64 promotion, size)
                        without writing
      --verify          before replacing anything, re-read the output: it must be faststart
                        and every sample's bytes must equal the input's
      --drop-free       drop top-level free/skip padding
      --quiet           no progress line (progress is shown only on a terminal anyway)
      --json            machine-readable result (schema: docs/json-schema.md)
      --max-moov-size SIZE  refuse a moov larger than SIZE (default 256M)

    \(exitCodes)
    """

    static let check = """
    Usage: mp4probe check [OPTIONS] PATH|DIR|- ...

    Checks every file given (directories recursively; - reads paths from standard input),
    reading only box headers and moov, against a policy. Exit 0 when every file passes, 1 when
    any fails a rule, 4 when a file cannot be read, 2 for usage errors.

    Policy (defaults: faststart required, integrity always checked, the rest reported only):
      --policy FILE                JSON policy (keys: requireFaststart, maxStartupBytes,
                                   maxKeyframeInterval, maxInterleave, allowCodecs, allowBrands,
                                   allowFragmented, maxDuration, minResolution, maxResolution);
                                   flags override it
      --allow-moov-at-end          do not require faststart
      --max-startup-bytes SIZE     bytes a progressive player may need before playback
      --max-keyframe-interval S    longest gap between keyframes, seconds
      --max-interleave S           how far one track may run ahead of another in file order
      --allow-codecs LIST          e.g. avc1,hvc1,mp4a (formats or codec-string prefixes)
      --allow-brands LIST          allowed major brands
      --no-fragmented              fail fragmented files
      --max-duration S, --min-resolution WxH, --max-resolution WxH

    Files and output:
      --include GLOB, --exclude GLOB   filter files found in directories (repeatable; default:
                                   .mp4 .m4v .m4a .mov .3gp .3g2 .m4s ...)
      --format text|json|jsonl|junit|github   (default text)
      --jobs N                     files checked at once (default: the number of cores)
      --fix                        rewrite files that fail only because of their layout to
                                   faststart, in place (atomic), then check them again
      --quiet                      no progress line (shown only on a terminal)

    \(exitCodes)
    """

    static let fetch = """
    Usage: mp4probe fetch URL|FILE --cache DIR [--time T [--duration D] | --all] [--block SIZE]

    Fills the cache in DIR for URL: the box headers and moov, plus with --time exactly the byte
    ranges a player needs to show T..T+D (the seek plan), or with --all the whole resource (one
    streamed request per missing part, written to the cache as it arrives; memory stays
    bounded whatever the size). Every --block bytes (default 64M) what arrived is committed
    (data fsync, then the range table), so an interrupted fetch keeps it. Reads already cached
    are not fetched again; an entry whose upstream changed (length, ETag, Last-Modified) is
    emptied first. See docs/cache.md.

    \(exitCodes)
    """

    static let cache = """
    Usage: mp4probe cache ls DIR [--json]
           mp4probe cache stat DIR
           mp4probe cache evict DIR --max-size SIZE
           mp4probe cache export DIR RESOURCE OUT

    ls lists the entries (most recently used first) with how much of each is present; stat
    sums them; evict removes least-recently-used entries until the data files occupy at most
    SIZE on disk; export copies a complete entry to OUT as a normal file (atomically).

    \(exitCodes)
    """

    static let boxes = """
    Usage: mp4probe boxes FILE [--json [--compact]] [--full [--entries N]] [--depth N] [--max-moov-size SIZE]

    Prints the box tree: every top-level box with offset and size, and the tree of every box
    that is not media data or padding, with version/flags and the key fields of known boxes.
    Tables (stts, stsc, stsz, stco, ...) are summarised by their entry counts.

    Options:
      --full               print the entries of tables, edit lists, sidx and tfra
      --entries N          with --full: at most N entries per table
      --depth N            print N levels (1 = top level only)
      --json               machine-readable tree (schema: docs/json-schema.md)
      --compact            with --json: one line
      --max-moov-size SIZE refuse a moov larger than SIZE (default 256M)
      -h, --help           this help

    \(exitCodes)
    """
}
