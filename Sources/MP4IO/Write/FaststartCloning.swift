import Foundation
import MP4Core
import MP4ProbeSystem
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension FaststartRewriter {
    /// `IN OUT` where the filesystem shares extents (`FICLONERANGE`: XFS, Btrfs): OUT is the
    /// ``FaststartInsertion`` layout of IN (the leading boxes, the new `moov`, a `free` box to
    /// the next block boundary) followed by IN's bytes, whose blocks are shared with IN instead
    /// of copied. Only the head and the last partial block are written. Returns `nil`, having
    /// left nothing behind, where cloning is not possible (another filesystem, ext4, across
    /// filesystems, a layout the insertion does not handle): the caller copies.
    static func rewriteByCloning(input: String, source: FileSource, file: MP4File, output: String, options: Options) async throws -> (FaststartInsertion, verified: Int?)? {
        #if os(Linux)
        let directory = Platform.split(output).directory
        guard Platform.filesystemMayClone(directory) else { return nil }
        let inputFD = try Platform.openForReading(input)
        defer { Platform.closeFile(inputFD) }
        let before = try Platform.status(inputFD, path: input)
        AtomicFileWriter.removeStaleTemporaries(beside: output)
        let writer = try AtomicFileWriter(destination: output, permissions: before.permissions & 0o777)
        do {
            let outputFD = try writer.fd()
            let block = InPlaceFaststart.blockSize(outputFD)
            let insertion: FaststartInsertion?
            do {
                insertion = try await FaststartInsertion.make(file, source: source, blockSize: block)
            } catch let error as MP4Error where error.kind == .unsupported {
                insertion = nil
            }
            guard let insertion, insertion.inputSize == before.size else { writer.abort(); return nil }
            let shift = insertion.insertedLength
            let cloneEnd: UInt64
            switch insertion.tail {
            case .cut(let at): cloneEnd = at - shift
            case .free: cloneEnd = before.size
            }
            // Whole blocks are shared (a range that ends at IN's end may end anywhere); the
            // last partial block is copied.
            let shared = cloneEnd == before.size ? cloneEnd : cloneEnd / block * block
            // Less than a block to share (a small file): nothing gained, and nothing would tell
            // whether the filesystem can; the copy path writes it.
            guard shared > 0, mp4probe_clone_range(inputFD, 0, Int64(shared), outputFD, Int64(shift)) == 0 else {
                writer.abort()
                return nil
            }
            if shared < cloneEnd {
                var buffer: [UInt8] = []
                try Platform.copy(inputFD, shared..<cloneEnd, to: outputFD, at: shift + shared, buffer: &buffer, names: (input, writer.temporaryPath)) { _ in }
            }
            try writer.write(insertion.head, at: 0)
            if case .free(let typeAt) = insertion.tail { try writer.write(Array("free".utf8), at: typeAt) }
            try writer.setSize(insertion.outputSize)
            let after = try Platform.status(inputFD, path: input)
            if after != before {
                throw MP4Error(.io, "\(input) was modified during the rewrite; the output was discarded")
            }
            var verified: Int?
            if options.verifies {
                verified = try await verify(input: input, output: writer.temporaryPath, limits: options.limits)
            }
            try writer.commit()
            return (insertion, verified)
        } catch {
            writer.abort()
            throw error
        }
        #else
        return nil
        #endif
    }
}
