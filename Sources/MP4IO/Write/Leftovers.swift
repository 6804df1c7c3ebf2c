#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The temporary files mp4probe writes beside a film (an output's `.NAME.mp4probe-PID-*.tmp`,
/// an in-place journal's `..NAME.mp4probe-journal.mp4probe-PID-*.tmp`), as a reader of the
/// film finds them: a writer killed before its rename leaves one for good.
public enum Leftovers {
    /// Removes the temporaries of the film at `path` whose processes are gone (no lock is
    /// needed: nobody writes them) and returns the others, for the reader to mention (a write
    /// under way, or a leftover whose process id is in use again). `names`: the listing of the
    /// film's directory, when the caller has it (`check` lists each directory once).
    public static func sweep(beside path: String, names: [String]? = nil) -> [(path: String, process: Int32)] {
        // A symbolic link's temporaries are beside the file it names (as the writers put
        // them); any other path's are in its own directory, whose listing the caller may have.
        // (Resolving every path made `check dir/` list the directory once per file.)
        let isLink = CacheFiles.linkStatus(path).map { ($0.st_mode & S_IFMT) == S_IFLNK } ?? false
        let film = isLink ? (Platform.resolvedPath(path) ?? path) : path
        let (directory, base) = Platform.split(film)
        let journalBase = Platform.split(InPlaceFaststart.journalPath(for: film)).name
        var kept: [(path: String, process: Int32)] = []
        for name in (isLink ? nil : names) ?? Platform.list(directory) where name.hasPrefix(".") && name.hasSuffix(".tmp") {
            guard let pid = AtomicFileWriter.writerProcess(ofTemporary: name, base: base) ?? AtomicFileWriter.writerProcess(ofTemporary: name, base: journalBase) else { continue }
            let leftover = Platform.path(in: directory, name)
            if pid != Platform.processID && !Platform.processExists(pid) {
                Platform.removeFile(leftover)
            } else {
                kept.append((leftover, pid))
            }
        }
        return kept
    }
}
