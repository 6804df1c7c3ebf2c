import Foundation

/// Certificates in PEM text (`-----BEGIN CERTIFICATE-----`, base64, `-----END CERTIFICATE-----`),
/// as a `--ca-file` holds them.
public enum PEM {
    /// The DER bytes of each certificate in `text`, in order; blocks that do not decode are
    /// left out.
    public static func certificates(in text: String) -> [Data] {
        let begin = "-----BEGIN CERTIFICATE-----", end = "-----END CERTIFICATE-----"
        var found: [Data] = []
        var rest = text[...]
        while let start = rest.range(of: begin), let stop = rest.range(of: end, range: start.upperBound..<rest.endIndex) {
            let body = rest[start.upperBound..<stop.lowerBound]
            if let der = Data(base64Encoded: String(body), options: .ignoreUnknownCharacters), !der.isEmpty { found.append(der) }
            rest = rest[stop.upperBound...]
        }
        return found
    }
}
