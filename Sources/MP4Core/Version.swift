/// The version of the mp4probe package: printed by `mp4probe --version`, sent in the
/// `User-Agent` of HTTP requests, recorded in cache tables.
public enum MP4ProbeVersion {
    /// Semantic version of this build.
    public static let string = "0.1.0"
    /// The `User-Agent` header value HTTP requests carry unless one is given.
    public static let userAgent = "mp4probe/\(string)"
}
