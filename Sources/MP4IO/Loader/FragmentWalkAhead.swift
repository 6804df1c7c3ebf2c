import MP4Core

/// Where a player that reads a fragmented film's fragment headers will read next, learned a
/// few fragments ahead of it: the decisions of the loader's walk ahead, without I/O (the
/// model is `FragmentSeekSearch`; ``Prefetcher`` is its driver).
///
/// ffmpeg, mpv and Chromium open a fragmented film without an index (`-movflags
/// frag_keyframe+empty_moov`, what live recorders and MediaRecorder write) with a request per
/// fragment: each reads the `moof` and the `mdat` header after it, then asks for the next
/// fragment, whose place only those headers give. Through a cache every such request that
/// finds nothing cached waits for an origin request of its own, one after the other (300 of
/// them for a 10-minute film). The walk reads each fragment's head (``headSize``, one small
/// request) before the player asks for it, at most ``depth`` fragments past the furthest
/// head a player has read: a player that plays on instead costs at most that many heads,
/// which it would have fetched anyway.
struct FragmentWalkAhead: Sendable, Equatable {
    /// Fragments walked past the furthest fragment head a player read.
    static let depth = 16
    /// The most fragments it learns (a film of 2 s fragments: 55 hours).
    static let maxFragments = 100_000
    /// What is read of the first fragment: its `moof` and the `mdat` header after it are in it
    /// (the preload's walk reads the same, ``Preload/fragmentHead``). Later heads are sized
    /// from the fragments learned (``nextHeadSize``).
    static let headSize: UInt64 = Preload.fragmentHead
    /// The smallest head read, and the unit heads are sized in.
    static let smallestHead: UInt64 = 4 << 10
    /// The most read of one fragment to find where it ends: a `moof` (with the boxes before
    /// it) longer than this ends the walk.
    static let maxHeadSpan: UInt64 = 1 << 20
    /// The most bytes from a fragment's start to the end of the header after its `moof` seen
    /// so far (0: none learned yet).
    private(set) var largestSpan: UInt64 = 0

    /// How much of the next fragment to read: twice the largest span seen, in
    /// ``smallestHead`` units (a `moof` of a 2 s fragment is about 1 KiB; reading 16 KiB of
    /// each of 300 fragments cost a start 4.8 MB of the origin's bytes, most of them media
    /// the player did not ask for yet); ``headSize`` until a fragment is learned. A `moof`
    /// that outgrows its head is read on (``Head/longer(through:)``).
    var nextHeadSize: UInt64 {
        guard largestSpan > 0 else { return Self.headSize }
        let units = (2 * largestSpan + Self.smallestHead - 1) / Self.smallestHead
        return min(Self.maxHeadSpan, max(Self.smallestHead, units * Self.smallestHead))
    }

    /// Where the first fragment starts, and the file's length.
    let first: UInt64
    let length: UInt64
    /// The start of each fragment whose end is learned, and that end (the next one's start).
    private(set) var next: [UInt64: UInt64] = [:]
    /// The fragment starts known: the first, and every learned end.
    private var starts: Set<UInt64>
    /// The furthest fragment start a player has read from.
    private(set) var anchor: UInt64?
    /// The latest reads from offsets not known as fragment starts (at most
    /// ``maxRecentReads``): a player ahead of the walk reads heads the walk has not learned
    /// yet, and the anchor moves there once it has.
    private var recentReads: [UInt64] = []
    static let maxRecentReads = 64
    /// Set once a head held no `moof` (the fragments end there, or the file is not what its
    /// start said) or the bound was reached: nothing more is walked.
    private(set) var ended = false

    init(first: UInt64, length: UInt64) {
        self.first = first
        self.length = length
        starts = [first]
        frontier = first
    }

    /// The head the walk reads at `offset` when it is a fragment's known start, or past every
    /// start it knows (nil elsewhere: before the first fragment, inside fragments learned, or
    /// once the walk has ended): a player's read there fetches no more first.
    ///
    /// Past the starts known: a player that reads the headers faster than the walk (on a
    /// loaded machine, or when its read of a head came before the walk's) reads the next
    /// head before the walk has learned where it is, and then every head after it from
    /// there. Each such read fetched a first piece of 64 KiB instead of a head (4 to 6 of 30
    /// heads in a loaded run of `FragmentedStartTests`, 60 KiB each, more time than a head
    /// on a slow link). A read of media there (a fragment not learned yet) waits for its
    /// window one round trip longer.
    func headSize(at offset: UInt64) -> UInt64? {
        if starts.contains(offset) { return nextHeadSize }
        return !ended && offset > frontier && offset < length ? nextHeadSize : nil
    }

    /// The furthest fragment start known.
    private(set) var frontier: UInt64

    /// A player reads from `offset`. A read from a fragment's start (a header read), or from
    /// before the first fragment (the player reads on into it), moves the walk's anchor there
    /// when that is further than before; a read anywhere else (media) changes nothing. Returns
    /// whether there is a head to read (``wanted``).
    mutating func playerRead(at offset: UInt64) -> Bool {
        let start: UInt64
        if offset < first {
            start = first
        } else if starts.contains(offset) {
            start = offset
        } else {
            recentReads.append(offset)
            if recentReads.count > Self.maxRecentReads { recentReads.removeFirst() }
            return wanted != nil
        }
        if anchor.map({ start > $0 }) ?? true { anchor = start }
        return wanted != nil
    }

    /// The fragment whose head is to be read next: the first one, going from the anchor, whose
    /// end is not known, when it is within ``depth`` fragments of the anchor.
    var wanted: UInt64? {
        guard !ended, var position = anchor else { return nil }
        for _ in 0...Self.depth {
            guard position < length else { return nil }
            guard let end = next[position] else { return position }
            position = end
        }
        return nil
    }

    /// What the first `bytes` of the head at `start` (``headSize`` bytes, ending at `headEnd`)
    /// say, as soon as they say it: the boxes before a `moof`, the `moof` and the boxes whose
    /// headers follow it inside the head, up to the next `moof` or `mfra` (the rules of
    /// ``Preload/fragment(at:length:of:)``). The walk takes the next step as soon as the `moof`
    /// and the `mdat` header after it have arrived, not once the whole head has: an origin
    /// that paces from its first byte took a pause for the last bytes of each head.
    enum Head: Equatable {
        /// More bytes are needed (they are still arriving).
        case needsMore
        /// A fragment that ends (the next one starts) at `end`; its `moof` and the header
        /// after it end by `headerEnd`.
        case fragment(end: UInt64, headerEnd: UInt64)
        /// The `moof`, or a box before it, ends past the head: it is read on to `through`.
        case longer(through: UInt64)
        /// No `moof` within the head (or within ``maxHeadSpan``): the walk ends.
        case none
    }

    static func head(_ bytes: ArraySlice<UInt8>, at start: UInt64, headEnd: UInt64, length: UInt64) -> Head {
        let have = start + UInt64(bytes.count)
        let whole = have >= min(headEnd, length)
        var position = start
        var moofEnd: UInt64?
        // Whether the box at `position` comes after the `moof` (its header then is read).
        var pastMoofHeader = false
        func found() -> Head {
            guard let moofEnd else { return .none }
            return .fragment(end: position, headerEnd: min(length, pastMoofHeader ? moofEnd + 16 : moofEnd))
        }
        for _ in 0..<64 {
            guard position < length else { break }
            guard position < headEnd else {
                // The head ended before this box's header: when the `moof` or a box before it
                // reached past the head, the fragment's end is still unknown.
                if pastMoofHeader { break }
                let through = min(length, position + 16)
                return through - start <= maxHeadSpan ? .longer(through: through) : .none
            }
            // A box that ends past what has arrived: its successor's header is still to come.
            guard position - start < UInt64(bytes.count) else { return whole ? found() : .needsMore }
            let available = bytes[(bytes.startIndex + Int(position - start))...]
            guard available.count >= 8 else { return whole ? found() : .needsMore }
            let header: BoxHeader
            do {
                header = try BoxHeader.parse(available, at: position, containerEnd: length)
            } catch {
                // A large size needs 16 bytes; anything else is not a box.
                return available.count < 16 && !whole ? .needsMore : found()
            }
            if moofEnd != nil { pastMoofHeader = true }
            if header.type == .mfra || (header.type == .moof && moofEnd != nil) { break }
            let end = position + min(header.size, length - position)
            guard end > position else { break }
            if header.type == .moof { moofEnd = end }
            position = end
        }
        return found()
    }

    /// The head at `start` was read: the fragment ends at `end`, or (nil) there was no
    /// fragment there and nothing more is walked.
    mutating func learned(_ start: UInt64, end: UInt64?, headerEnd: UInt64? = nil) {
        guard let end, end > start, end <= length, next.count < Self.maxFragments else {
            ended = true
            return
        }
        if let headerEnd, headerEnd > start { largestSpan = max(largestSpan, min(headerEnd - start, Self.maxHeadSpan)) }
        next[start] = end
        starts.insert(end)
        frontier = max(frontier, end)
        if recentReads.contains(end), anchor.map({ end > $0 }) ?? true { anchor = end }
    }
}
