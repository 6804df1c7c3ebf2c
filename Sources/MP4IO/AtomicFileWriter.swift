import MP4Core
import MP4ProbeSystem

/// Writes a file so that its destination only ever holds the old file or the complete new
/// one: the bytes go to a temporary file in the destination's directory, which is flushed to
/// disk and then renamed over the destination (and the directory flushed). On any failure the
/// temporary file is removed and the destination is untouched.
final class AtomicFileWriter {
    /// Where the file ends up.
    let destination: String
    /// The temporary file being written.
    let temporaryPath: String
    private var descriptor: Int32?
    /// Set once the file was renamed into place or removed.
    private var finished = false
    /// The slot of the temporary file in the interrupt-cleanup table (SIGINT, SIGTERM and
    /// SIGHUP remove it before the process ends), or -1.
    private var cleanupSlot: Int32 = -1

    /// Creates the temporary file beside `destination` with `permissions`.
    init(destination: String, permissions: UInt32) throws {
        self.destination = destination
        let (directory, base) = Platform.split(destination)
        var attempt = 0
        while true {
            let candidate = Platform.path(in: directory, ".\(base).mp4probe-\(Platform.processID)-\(Platform.randomSuffix()).tmp")
            // Registered before it exists: a signal between the two must not leave it behind
            // (the name holds this process's id and a random part: nobody else's file).
            let slot = mp4probe_register_temporary(candidate)
            do {
                let fd = try Platform.createExclusive(candidate, permissions: 0o600)
                self.temporaryPath = candidate
                self.descriptor = fd
                self.cleanupSlot = slot
                break
            } catch let error as MP4Error {
                mp4probe_forget_temporary(slot)
                attempt += 1
                if attempt >= 5 || !error.message.contains("exists") {
                    throw MP4Error(.io, "cannot write in the directory of \(destination): \(error.message)")
                }
            }
        }
        do {
            try Platform.setPermissions(try fd(), permissions, path: temporaryPath)
        } catch {
            abort()
            throw error
        }
    }

    deinit { abort() }

    /// Removes `.BASE.mp4probe-PID-*.tmp` files beside `destination` left by processes that
    /// no longer exist (killed with SIGKILL, or a machine crash): only our own naming, only for
    /// this destination, only when the process is gone. It lists the directory, so writers of
    /// large files call it (the faststart rewrite), not every small atomic write (the cache's
    /// range tables, whose directory may hold thousands of entries).
    static func removeStaleTemporaries(beside destination: String) {
        let (directory, base) = Platform.split(destination)
        let prefix = ".\(base).mp4probe-"
        for name in Platform.list(directory) where name.hasPrefix(prefix) && name.hasSuffix(".tmp") {
            let rest = name.dropFirst(prefix.count)
            guard let dash = rest.firstIndex(of: "-"), let pid = Int32(rest[..<dash]), pid > 0, pid != Platform.processID else { continue }
            if !Platform.processExists(pid) { Platform.removeFile(Platform.path(in: directory, name)) }
        }
    }

    func fd() throws -> Int32 {
        guard let descriptor else { throw MP4Error(.io, "\(temporaryPath) is already closed") }
        return descriptor
    }

    /// Sets the final size up front, so that holes copied from a sparse input stay holes.
    func setSize(_ size: UInt64) throws { try Platform.truncate(try fd(), size: size, path: temporaryPath) }

    func write(_ bytes: [UInt8], at offset: UInt64) throws {
        try Platform.writeFully(try fd(), bytes, offset: offset, path: temporaryPath)
    }

    /// Flushes, closes and renames the temporary file over the destination.
    func commit() throws {
        let fd = try fd()
        do {
            try Platform.sync(fd, path: temporaryPath)
            Platform.closeFile(fd)
            descriptor = nil
            try Platform.renameFile(temporaryPath, to: destination)
            finished = true
            mp4probe_forget_temporary(cleanupSlot)
        } catch {
            abort()
            throw error
        }
        Platform.syncDirectory(Platform.split(destination).directory)
    }

    /// Removes the temporary file (nothing happens when it was committed).
    func abort() {
        if let descriptor {
            Platform.closeFile(descriptor)
            self.descriptor = nil
        }
        if !finished {
            finished = true
            Platform.removeFile(temporaryPath)
            mp4probe_forget_temporary(cleanupSlot)
        }
    }
}
